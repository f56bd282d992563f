package run

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/outboxchaos/outboxchaos/scenarios/scenario"
)

// replace waits until the step's pod has died at its crash point or
// kill-point, has exited, or the run is quiescent while it still runs (its
// point was never reached; a job or migrate pod is always awaited to its
// end). A killed pod is replaced by a new pod of its
// role under a new name (Env.Replace); a replaced job or migrate pod is
// run to completion, as the batch job's next run (or a deployment's
// migration job retried) would be. A pod that exited
// non-zero before its point is replaced too, as a deployment would.
func (r *runner) replace(ctx context.Context, st scenario.Step) error {
	p, err := r.e.Pod(st.Pod)
	if err != nil {
		return err
	}
	role := r.e.roleOf(p.Name())
	job := role == "job" || role == "migrate" // runs to its end
	d := st.Timeout.D()
	if d == 0 {
		d = waitLong
	}
	err = r.e.WaitFor(ctx, d, st.Pod+" killed, exited or the run quiescent", func(ctx context.Context) (bool, error) {
		select {
		case <-p.Done():
			return true, nil
		default:
		}
		if job {
			return false, nil // a job always ends; before it, nothing is to be seen
		}
		if _, hit := p.Killpoint(); hit {
			// It said it reached its point and is being killed: wait for
			// its death, not for a state it may look quiescent in (the
			// delivery it held unacked is not in the queue until then).
			return false, nil
		}
		s, err := r.e.Snapshot(ctx)
		if err != nil {
			return false, err
		}
		return r.drained(s), nil
	})
	if err != nil {
		return err
	}
	select {
	case <-p.Done():
	default:
		r.e.Logf("harness", "%s never reached its crash point: the run is quiescent", p.Name())
		return nil
	}
	if _, hit := p.Killpoint(); !hit || p.ExitCode() != 137 {
		if p.ExitCode() == 0 {
			return nil
		}
		// It failed before its point (a dependency not ready at start-up):
		// a deployment restarts it all the same.
		r.e.Logf("harness", "%s exited %d before its crash point", p.Name(), p.ExitCode())
	}
	np, err := r.e.Replace(ctx, p)
	if err != nil {
		return err
	}
	if !job {
		// The replacement is supervised as a deployment's pod is: should
		// it fail at start-up, it is restarted.
		r.e.Supervise(np)
		return nil
	}
	if err := r.e.WaitExit(ctx, np, 60*time.Second); err != nil {
		return err
	}
	if np.ExitCode() != 0 {
		return errors.New(np.Name() + " (the re-run) failed: exit " + fmt.Sprint(np.ExitCode()))
	}
	return nil
}
