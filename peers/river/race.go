package main

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/outboxchaos/outboxchaos/history"
	"github.com/outboxchaos/outboxchaos/peers/seam"
	"github.com/outboxchaos/outboxchaos/system/killpoint"
)

// rescueRace forces the window of River issue #1302 (fixed in v0.48.0):
// the rescuer fetches a running job as stuck, the job completes, then the
// rescuer writes its rescue. Armed, the first job's Work waits until the
// rescuer's JobGetStuck has returned rows; the rescuer then waits (in the
// tracer, after that query) until the completer's JobSetStateIfRunningMany
// has returned, so its JobRescueMany runs after the completion. The waits
// are events, not sleeps; each is capped so a version that never reaches
// the window cannot hang the run.
type rescueRace struct {
	armed     bool
	log       *slog.Logger
	mu        sync.Mutex
	held      int64         // the job Work holds
	fetched   chan struct{} // the rescuer fetched stuck jobs
	completed chan struct{} // the completer wrote a completion after that
	fOnce     sync.Once
	cOnce     sync.Once
}

// raceCap bounds each wait: the rescuer runs every 30 s.
const raceCap = 45 * time.Second

func newRescueRace(armed bool, log *slog.Logger) *rescueRace {
	return &rescueRace{armed: armed, log: log, fetched: make(chan struct{}), completed: make(chan struct{})}
}

// rules: the kill-point relay.before-mark before River's completion write,
// and the race's two tracer hooks.
func (r *rescueRace) rules() []seam.Rule {
	rules := []seam.Rule{{Name: "mark", Match: []string{"JobSetStateIfRunningMany"}, Point: killpoint.RelayBeforeMark}}
	if !r.armed {
		return rules
	}
	return append(rules,
		seam.Rule{Name: "rescuer-fetched", Match: []string{"JobGetStuck"}, After: true, OnlyOK: true,
			Hook: func(ctx context.Context, _ string, end *pgx.TraceQueryEndData) {
				if end == nil || end.CommandTag.RowsAffected() == 0 {
					return
				}
				r.fOnce.Do(func() {
					r.log.Info("rescuer fetched stuck jobs; holding it until the job completes", history.KeyEvent, history.RescuerFetched,
						"rows", end.CommandTag.RowsAffected())
					close(r.fetched)
				})
				r.wait(r.completed, "completion")
			}},
		seam.Rule{Name: "completed", Match: []string{"JobSetStateIfRunningMany"}, After: true, OnlyOK: true,
			Hook: func(context.Context, string, *pgx.TraceQueryEndData) {
				select {
				case <-r.fetched:
				default:
					return
				}
				r.cOnce.Do(func() {
					r.log.Info("job completion written; releasing the rescuer", history.KeyEvent, history.RaceCompleted)
					close(r.completed)
				})
			}},
	)
}

// holdWork holds the first job's Work until the rescuer fetched it.
func (r *rescueRace) holdWork(id int64) {
	if !r.armed {
		return
	}
	r.mu.Lock()
	first := r.held == 0
	if first {
		r.held = id
	}
	r.mu.Unlock()
	if !first {
		return
	}
	r.log.Info("holding the job until the rescuer fetches it", history.KeyEvent, history.WorkHeld, "job_id", id)
	r.wait(r.fetched, "rescuer fetch")
}

func (r *rescueRace) wait(ch chan struct{}, what string) {
	select {
	case <-ch:
	case <-time.After(raceCap):
		r.log.Warn("rescue race: gave up waiting", history.KeyEvent, history.RaceTimeout, "for", what)
	}
}
