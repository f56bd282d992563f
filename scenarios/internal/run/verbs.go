package run

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"time"

	"github.com/outboxchaos/outboxchaos/faults"
	"github.com/outboxchaos/outboxchaos/rig"
	"github.com/outboxchaos/outboxchaos/scenarios/scenario"
	"github.com/outboxchaos/outboxchaos/system/killpoint"
)

// The registered verbs' runner functions that engine.go does not hold.

// enqueue runs the batch job to completion, with the step's pod faults
// armed in it.
func (r *runner) enqueue(ctx context.Context, st scenario.Step) error {
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
		_, err = r.runJob(ctx, ps, st.WhileFrozen)
		return err
	}
	// As a job scheduler would: a run that failed (its database link down
	// while it ran) is run again until one completes, without the faults
	// armed in the first run, as a deployment restarts a pod. The job is
	// idempotent; the pipeline is judged either way.
	backoff := 200 * time.Millisecond
	frozen := st.WhileFrozen
	for {
		p, err := r.runJob(ctx, ps, frozen)
		if err == nil || ctx.Err() != nil || p == nil || !exited(p) {
			return err
		}
		ps, frozen = withoutFaults(ps), nil
		r.e.Logf("harness", "%v: run again in %s, as its schedule would", err, backoff)
		if err := r.pause(ctx, backoff); err != nil {
			return err
		}
		backoff = min(2*backoff, 2*time.Second)
	}
}

// runJob runs one batch job pod to its end. With whileFrozen, once the pod
// froze at its pause-point those faults go in, the pod is continued, and
// they stay until it exited: tied to the job's own statements, not to a
// time. A pod that exits (or hangs) without freezing gets none.
func (r *runner) runJob(ctx context.Context, ps podSpec, whileFrozen []faults.Spec) (*rig.Pod, error) {
	if len(whileFrozen) == 0 {
		return r.e.Run(ctx, "job", ps)
	}
	p, err := r.e.Start(ctx, "job", ps)
	if err != nil {
		return nil, err
	}
	err = r.e.WaitFor(ctx, time.Minute, p.Name()+" frozen or exited", func(context.Context) (bool, error) {
		return p.Frozen() || exited(p), nil
	})
	switch {
	case ctx.Err() != nil:
		return p, ctx.Err()
	case err != nil || !p.Frozen():
		r.e.Logf("harness", "%s never froze: no fault while frozen", p.Name())
	default:
		var fs []faults.Fault
		for _, sp := range whileFrozen {
			f, _ := sp.Build()
			fs = append(fs, f)
		}
		resume, _ := faults.Spec{Kind: faults.KindResume, Pod: p.Name()}.Build()
		err = r.eng.During(ctx, fs, false, func(ctx context.Context) error {
			if err := r.eng.Inject(ctx, resume); err != nil {
				return err
			}
			return r.e.WaitExit(ctx, p, time.Minute)
		})
		var ie *faults.InjectError
		if errors.As(err, &ie) && !exited(p) {
			// A link already down (another window): the job runs on
			// without this fault.
			r.e.Logf("harness", "skip %v", err)
			if err := p.Continue(); err != nil {
				return p, err
			}
		} else if err != nil {
			return p, err
		}
	}
	return p, r.e.finish(ctx, p)
}

// withoutFaults is ps without the variables that arm its faults (kill-,
// pause- and failpoints, crash points): a job's run again.
func withoutFaults(ps podSpec) podSpec {
	return ps.without(slices.Concat(faultVars, []string{killpoint.PauseEnvVar})...)
}

// awaitStep waits until the step's condition holds.
func (r *runner) awaitStep(ctx context.Context, st scenario.Step) error {
	return r.await(ctx, st.Cond, st.Timeout, r.newProbe(st.Cond))
}

// assert fails unless the step's condition holds now.
func (r *runner) assert(ctx context.Context, st scenario.Step) error {
	ok, err := r.newProbe(st.Cond).holds(ctx, st.Cond)
	if err == nil && !ok {
		err = errors.New("does not hold")
	}
	return err
}

// inject puts the step's faults in place until the end of the run.
func (r *runner) inject(ctx context.Context, st scenario.Step) error {
	for _, sp := range st.Faults {
		f, _ := sp.Build()
		if err := r.eng.Inject(ctx, f); err != nil {
			return err
		}
	}
	return nil
}

// restart starts the step's pod again, under its name or a new one.
func (r *runner) restart(ctx context.Context, st scenario.Step) error {
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
func (r *runner) stop(_ context.Context, st scenario.Step) error {
	p, err := r.e.Pod(st.Pod)
	if err != nil {
		return err
	}
	return p.Stop(5 * time.Second)
}

// exited reports whether p's process has ended.
func exited(p *rig.Pod) bool {
	select {
	case <-p.Done():
		return true
	default:
		return false
	}
}

// later waits the step's "after" (counted as waiting), then runs its
// steps in order.
func (r *runner) later(ctx context.Context, st scenario.Step) error {
	if err := r.pause(ctx, st.After.D()); err != nil {
		return err
	}
	return r.steps(ctx, st.Steps)
}
