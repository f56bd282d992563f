package sim

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/outboxchaos/outboxchaos/faults"
	"github.com/outboxchaos/outboxchaos/world"
)

// The worker deployment: Workers replicas, each a long-running pod; one
// consumes at a time (single active consumer), the others stand by. A pod
// that dies is replaced after restartDelay, with a new instance name, as a
// deployment would.

func (r *runner) startWorker(ctx context.Context) error {
	p, err := r.env.StartRole(ctx, "worker", nil, nil)
	if err != nil {
		return fmt.Errorf("start worker: %w", err)
	}
	r.mu.Lock()
	r.workers = append(r.workers, p)
	r.mu.Unlock()
	return nil
}

// activeWorker is the oldest running worker: RabbitMQ gives the single
// active consumer role to the first consumer and hands it to the next
// when that one goes.
func (r *runner) activeWorker() *world.Pod {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, p := range r.workers {
		select {
		case <-p.Done():
		default:
			return p
		}
	}
	return nil
}

// dropWorker takes p out of the deployment (it is being killed or
// replaced), so watchWorkers does not replace it a second time.
func (r *runner) dropWorker(p *world.Pod) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for i, w := range r.workers {
		if w == p {
			r.workers = append(r.workers[:i:i], r.workers[i+1:]...)
			return
		}
	}
}

// watchWorkers replaces a worker that exited on its own (a crash, or a
// dependency unreachable at start-up).
func (r *runner) watchWorkers(now time.Time) {
	r.mu.Lock()
	var dead []*world.Pod
	for _, p := range r.workers {
		select {
		case <-p.Done():
			dead = append(dead, p)
		default:
		}
	}
	r.mu.Unlock()
	for _, p := range dead {
		r.dropWorker(p)
		r.env.Logf("sim", "%s exited (code %d): replaced in %s", p.Name(), p.ExitCode(), restartDelay)
		r.note(Fired{Planned: Planned{At: now, What: "worker-exit"}, Actual: now, Note: fmt.Sprintf("%s exited %d", p.Name(), p.ExitCode())})
		r.after(now.Add(restartDelay), "worker-restart", func(ctx context.Context) { _ = r.startWorker(ctx) })
	}
}

// dayWorld is the simulated day's world as the fault engine sees it: the
// run's world, whose worker deployment can be rolled (faults.Deployer).
type dayWorld struct {
	faults.World
	r *runner
}

// RollingRestart is a deploy of the workers: for each replica, start its
// successor, then stop it (SIGTERM: a send in flight completes first).
func (w dayWorld) RollingRestart(ctx context.Context, role string) ([]string, error) {
	if role != "worker" {
		return nil, fmt.Errorf("the day deploys only its workers, not %q", role)
	}
	r := w.r
	r.mu.Lock()
	old := append([]*world.Pod(nil), r.workers...)
	r.mu.Unlock()
	var names []string
	var errs []error
	for _, p := range old {
		if err := r.startWorker(ctx); err != nil {
			errs = append(errs, fmt.Errorf("deploy: %w", err))
			continue
		}
		r.dropWorker(p)
		_ = p.Stop(10 * time.Second)
		names = append(names, p.Name())
	}
	return names, errors.Join(errs...)
}
