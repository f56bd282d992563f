package sim

import (
	"context"
	"time"

	"github.com/outboxchaos/outboxchaos/rig"
)

// The worker deployment: Workers replicas of the run's world (Env.Deploy),
// each a long-running pod; one consumes at a time (single active
// consumer), the others stand by. A pod that dies is replaced after
// restartDelay, with a new instance name, as a deployment would; a deploy
// is the world's rolling restart.

// deployWorkers starts the day's worker deployment; a dead replica's
// successor starts restartDelay of virtual time later.
func (r *runner) deployWorkers(ctx context.Context) error {
	r.env.SetRestartDelay(time.Duration(float64(restartDelay) / r.d.Rate))
	return r.env.Deploy(ctx, "worker", r.d.Workers)
}

// activeWorker is the oldest running worker: RabbitMQ gives the single
// active consumer role to the first consumer and hands it to the next
// when that one goes.
func (r *runner) activeWorker() *rig.Pod {
	if ws := r.env.Deployed("worker"); len(ws) > 0 {
		return ws[0]
	}
	return nil
}
