package run

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/outboxchaos/outboxchaos/checker"
	"github.com/outboxchaos/outboxchaos/faults"
	"github.com/outboxchaos/outboxchaos/scenarios/scenario"
)

// waitLong bounds a wait for something that must happen: generous, so only
// a condition that never comes (a canary, a real bug) reaches it.
const waitLong = 30 * time.Second

// runner runs a scenario's steps on one Env, injecting faults through the
// fault engine.
type runner struct {
	e   *Env
	eng *faults.Engine

	mu    sync.Mutex
	holds []interface{ Hold() *faults.Hold }

	// feeding counts the later steps (sustained load's job runs) of a
	// parallel step that have not finished: while one is pending, a
	// quiescent run is only between rounds, not done.
	feeding atomic.Int32
}

// drained reports whether the run is quiescent in s and no later step is
// still to enqueue more: a point not reached by then never will be.
func (r *runner) drained(s checker.State) bool {
	return r.feeding.Load() == 0 && checker.Quiescent(s)
}

// steps runs steps in order and stops at the first failure.
func (r *runner) steps(ctx context.Context, steps []scenario.Step) error {
	for i, st := range steps {
		if err := r.step(ctx, st); err != nil {
			return fmt.Errorf("step %d (%s): %w", i+1, st, err)
		}
	}
	return nil
}

// step carries out one step through its verb in the registry.
func (r *runner) step(ctx context.Context, st scenario.Step) error {
	run, ok := runs[st.Do]
	if !ok {
		return fmt.Errorf("unknown step %q", st.Do)
	}
	return run(r, ctx, st)
}

// runs is how the runner carries out each step verb (a runner method
// expression), by the verb's name. It is filled in init: verbs that hold
// steps (during, parallel) run them through it.
var runs map[string]func(r *runner, ctx context.Context, st scenario.Step) error

func init() {
	runs = map[string]func(r *runner, ctx context.Context, st scenario.Step) error{
		"enqueue":  (*runner).enqueue,
		"start":    (*runner).start,
		"await":    (*runner).awaitStep,
		"assert":   (*runner).assert,
		"inject":   (*runner).inject,
		"recover":  (*runner).recoverStep,
		"during":   (*runner).during,
		"parallel": (*runner).parallelStep,
		"later":    (*runner).later,
		"restart":  (*runner).restart,
		"replace":  (*runner).replace,
		"stop":     (*runner).stop,
		"thaw":     (*runner).thaw,
	}
}

// podSpec arms the step's pod faults in the pod's environment.
func (r *runner) podSpec(st scenario.Step) (podSpec, error) {
	ps := podSpec{env: append([]string(nil), st.Env...), link: st.Link}
	for _, sp := range st.Faults {
		f, err := sp.Build()
		if err != nil {
			return ps, err
		}
		pf, ok := f.(faults.PodFault)
		if !ok {
			return ps, fmt.Errorf("%s is not armed in a pod", f)
		}
		ps.env = append(ps.env, r.eng.Arm(pf)...)
	}
	ps.env = joinPointVars(ps.env)
	return ps, nil
}

// start starts one pod per role; the step's faults are armed in the first.
func (r *runner) start(ctx context.Context, st scenario.Step) error {
	first, err := r.podSpec(st)
	if err != nil {
		return err
	}
	for i, role := range st.Roles {
		ps := podSpec{env: st.Env, link: st.Link}
		if i == 0 {
			ps = first
		}
		p, err := r.e.Start(ctx, role, ps)
		if err != nil {
			return err
		}
		if st.Supervise {
			r.e.Supervise(p)
		}
	}
	return nil
}

// await polls c through probe p until it holds; a condition that can no
// longer come (a pod that exited the wrong way) fails at once.
func (r *runner) await(ctx context.Context, c *scenario.Cond, timeout faults.Duration, p *probe) error {
	d := timeout.D()
	if d == 0 {
		d = waitLong
	}
	var failed error
	r.e.waits.begin()
	defer r.e.waits.end()
	err := r.e.WaitFor(ctx, d, c.String(), func(ctx context.Context) (bool, error) {
		if failed != nil {
			return false, failed
		}
		ok, err := p.holds(ctx, c)
		if errors.Is(err, errFailed) {
			failed = err
		}
		if err == nil && !ok {
			err = r.e.maybeJumpInStep(ctx, c)
		}
		return ok, err
	})
	if failed != nil {
		return failed
	}
	return err
}

// during holds the step's faults in place while its inner steps run and
// until its condition holds (or for its duration), then recovers them.
func (r *runner) during(ctx context.Context, st scenario.Step) error {
	if st.After > 0 {
		if err := r.pause(ctx, st.After.D()); err != nil {
			return err
		}
	}
	var fs []faults.Fault
	for _, sp := range st.Faults {
		f, _ := sp.Build()
		fs = append(fs, f)
		if h, ok := f.(interface{ Hold() *faults.Hold }); ok {
			r.mu.Lock()
			r.holds = append(r.holds, h)
			r.mu.Unlock()
		}
	}
	var p *probe
	if st.Cond != nil {
		// Fresh events count from before the faults went in.
		p = r.newProbe(st.Cond)
		p.faults = fs
	}
	err := r.eng.During(ctx, fs, st.Cond != nil, func(ctx context.Context) error {
		if err := r.steps(ctx, st.Steps); err != nil {
			return err
		}
		if st.Cond != nil {
			return r.await(ctx, st.Cond, st.Timeout, p)
		}
		return r.pause(ctx, st.For.D())
	})
	var ie *faults.InjectError
	if st.Optional && errors.As(err, &ie) {
		r.e.Logf("harness", "skip %v", err)
		return nil
	}
	return err
}

// pause waits d, counted as waiting in the run's cost.
func (r *runner) pause(ctx context.Context, d time.Duration) error {
	r.e.waits.begin()
	defer r.e.waits.end()
	return pause(ctx, d)
}

// pause waits d: only random schedules space their faults in wall time,
// and their verdicts never depend on where a fault lands.
func pause(ctx context.Context, d time.Duration) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(d):
		return nil
	}
}

// hold is the latest hold a during step put in place.
func (r *runner) hold() (*faults.Hold, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for i := len(r.holds) - 1; i >= 0; i-- {
		if h := r.holds[i].Hold(); h != nil {
			return h, nil
		}
	}
	return nil, errors.New("no hold in place: waiters and migrators need a hold-rows or hold-migration fault")
}

// parallelStep runs the step's inner steps concurrently.
func (r *runner) parallelStep(ctx context.Context, st scenario.Step) error {
	return r.parallel(ctx, st.Steps)
}

// parallel runs steps concurrently and returns their errors joined.
func (r *runner) parallel(ctx context.Context, steps []scenario.Step) error {
	var wg sync.WaitGroup
	errs := make([]error, len(steps))
	for i, st := range steps {
		wg.Add(1)
		feeding := st.Do == "later"
		if feeding {
			r.feeding.Add(1)
		}
		go func() {
			defer wg.Done()
			if feeding {
				defer r.feeding.Add(-1)
			}
			errs[i] = r.step(ctx, st)
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}
