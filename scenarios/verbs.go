package scenarios

import (
	"context"
	"errors"
	"strconv"
	"time"

	"github.com/outboxchaos/outboxchaos/world"
)

// The registered verbs' runner functions that engine.go does not hold.

// enqueue runs the batch job to completion, with the step's pod faults
// armed in it.
func (r *runner) enqueue(ctx context.Context, st Step) error {
	ps, err := r.podSpec(st)
	if err != nil {
		return err
	}
	if st.PerKind > 0 {
		ps.args = append(ps.args, "--per-kind", strconv.Itoa(st.PerKind))
	}
	if len(st.Kinds) > 0 {
		ps.args = append(ps.args, "--kinds", kindsArg(st.Kinds))
	}
	if !st.Supervise {
		_, err = r.e.Run(ctx, "job", ps)
		return err
	}
	// As a job scheduler would: a run that failed (its database link down
	// while it ran) is run again until one completes. The job is
	// idempotent; the pipeline is judged either way.
	backoff := 200 * time.Millisecond
	for {
		p, err := r.e.Run(ctx, "job", ps)
		if err == nil || ctx.Err() != nil || p == nil || !exited(p) {
			return err
		}
		r.e.Logf("harness", "%v: run again in %s, as its schedule would", err, backoff)
		if err := r.pause(ctx, backoff); err != nil {
			return err
		}
		backoff = min(2*backoff, 2*time.Second)
	}
}

// awaitStep waits until the step's condition holds.
func (r *runner) awaitStep(ctx context.Context, st Step) error {
	return r.await(ctx, st.Cond, st.Timeout, r.newProbe(st.Cond))
}

// assert fails unless the step's condition holds now.
func (r *runner) assert(ctx context.Context, st Step) error {
	ok, err := r.newProbe(st.Cond).holds(ctx, st.Cond)
	if err == nil && !ok {
		err = errors.New("does not hold")
	}
	return err
}

// inject puts the step's faults in place until the end of the run.
func (r *runner) inject(ctx context.Context, st Step) error {
	for _, sp := range st.Faults {
		f, _ := sp.Build()
		if err := r.eng.Inject(ctx, f); err != nil {
			return err
		}
	}
	return nil
}

// restart starts the step's pod again, under its name or a new one.
func (r *runner) restart(ctx context.Context, st Step) error {
	p, err := r.e.Pod(st.Pod)
	if err != nil {
		return err
	}
	if st.NewName {
		_, err = r.e.Replace(ctx, p)
	} else {
		_, err = r.e.Restart(ctx, p)
	}
	return err
}

// stop stops the step's pod: SIGTERM, then SIGKILL.
func (r *runner) stop(_ context.Context, st Step) error {
	p, err := r.e.Pod(st.Pod)
	if err != nil {
		return err
	}
	return p.Stop(5 * time.Second)
}

// exited reports whether p's process has ended.
func exited(p *world.Pod) bool {
	select {
	case <-p.Done():
		return true
	default:
		return false
	}
}
