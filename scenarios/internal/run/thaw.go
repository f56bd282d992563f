package run

import (
	"context"
	"errors"

	"github.com/outboxchaos/outboxchaos/faults"
	"github.com/outboxchaos/outboxchaos/scenarios/scenario"
)

// thaw waits until the step's pod froze at its pause-point, then keeps it
// frozen for the step's "for" and continues it (a resume fault, in the
// ledger): a pause sized by a deadline. A pod that exits, or a run that
// turns quiescent with no feed round still to come (or stays busy past the
// wait's bound) before the pod froze, means the point was never reached:
// nothing to thaw, not an error. The step's faults, if any, are in place
// while the pod is frozen and for the step's overhang after it continued.
func (r *runner) thaw(ctx context.Context, st scenario.Step) error {
	d := st.Timeout.D()
	if d == 0 {
		d = waitLong
	}
	frozen := false
	err := r.e.WaitFor(ctx, d, st.Pod+" frozen, exited or the run quiescent", func(ctx context.Context) (bool, error) {
		// A pod not started (yet) may never be: its role may not run at
		// all, and a quiescent run will not start it.
		if p, err := r.e.Pod(st.Pod); err == nil {
			if p.Paused() != "" {
				frozen = true
				return true, nil
			}
			select {
			case <-p.Done():
				return true, nil
			default:
			}
		}
		s, err := r.e.Snapshot(ctx)
		if err != nil {
			return false, err
		}
		return r.drained(s), nil
	})
	if ctx.Err() != nil {
		return ctx.Err()
	}
	if !frozen {
		r.e.Logf("harness", "thaw %s: it never froze (%v)", st.Pod, err)
		return nil
	}
	resume := faults.Spec{Kind: faults.KindResume, Pod: st.Pod}
	if st.Cond != nil {
		return r.thawOnce(ctx, st, resume)
	}
	r.e.Logf("harness", "%s froze: continued in %s", st.Pod, st.For)
	if len(st.Faults) > 0 {
		// The faults hit the pod's partner in the pipeline while it is
		// held, and the pod's own first steps for the overhang after; one
		// that cannot be put in place is skipped, as a window's (the pod
		// is then continued at the run's end).
		return r.during(ctx, scenario.Step{Do: "during", Faults: st.Faults, For: st.Overhang, Optional: true,
			Steps: []scenario.Step{{Do: "later", After: st.For, Steps: []scenario.Step{{Do: "inject", Faults: []faults.Spec{resume}}}}}})
	}
	if err := r.pause(ctx, st.For.D()); err != nil {
		return err
	}
	f, _ := resume.Build()
	return r.eng.Inject(ctx, f)
}

// thawOnce keeps the frozen pod frozen until the step's condition holds
// (the others moved its row), at most the step's "for", then continues
// it. A condition that did not come in time, or can no longer come,
// continues the pod all the same; a pod that exited the wrong way is the
// run's failure, as in any wait.
func (r *runner) thawOnce(ctx context.Context, st scenario.Step, resume faults.Spec) error {
	r.e.Logf("harness", "%s froze: continued once %s, at most %s", st.Pod, st.Cond, st.For)
	err := r.await(ctx, st.Cond, st.For, r.newProbe(st.Cond))
	switch {
	case ctx.Err() != nil:
		return ctx.Err()
	case errors.Is(err, errFailed):
		return err
	case err != nil:
		r.e.Logf("harness", "thaw %s: %v: continued all the same", st.Pod, err)
	}
	f, _ := resume.Build()
	return r.eng.Inject(ctx, f)
}
