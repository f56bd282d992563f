package run

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/outboxchaos/outboxchaos/rig"
)

// Deploy starts replicas pods of role as a deployment: each is supervised,
// and one that dies is replaced, after the restart delay, by a pod of the
// role under a new name without the dead one's faults (Replace). The
// run's fault world rolls them (faults.Deployer).
func (e *Env) Deploy(ctx context.Context, role string, replicas int) error {
	for range replicas {
		p, err := e.Start(ctx, role, podSpec{})
		if err != nil {
			return fmt.Errorf("deploy %s: %w", role, err)
		}
		e.sup.Supervise(p, e.Replace)
	}
	return nil
}

// SetRestartDelay makes a dead supervised pod's successor start after d,
// every time (a deployment's restart delay, where a run's own default
// doubles as a crash loop's does). Set it before the pods are supervised.
func (e *Env) SetRestartDelay(d time.Duration) { e.sup.Backoff, e.sup.MaxBackoff = d, d }

// Deployed returns the running supervised pods of role, oldest first.
func (e *Env) Deployed(role string) []*rig.Pod {
	var out []*rig.Pod
	for _, p := range e.sup.Supervised() {
		if e.roleOf(p.Name()) == role {
			out = append(out, p)
		}
	}
	return out
}

// Restarting is how many supervised pods died and wait for their
// successor to be up.
func (e *Env) Restarting() int { return e.sup.Restarting() }

// RollingRestart is a new release of role's deployment: for each of its
// running pods, start a successor, then stop the pod (SIGTERM: a send in
// flight completes first). It names the pods it replaced.
func (w faultWorld) RollingRestart(ctx context.Context, role string) ([]string, error) {
	old := w.Deployed(role)
	if len(old) == 0 {
		return nil, fmt.Errorf("no pod of %s runs as a deployment to roll", role)
	}
	var names []string
	var errs []error
	for _, p := range old {
		w.mu.Lock()
		m := w.meta[p.Name()]
		w.mu.Unlock()
		np, err := w.Start(ctx, role, m.spec.without(faultVars...))
		if err != nil {
			errs = append(errs, fmt.Errorf("roll %s: %w", p.Name(), err))
			continue
		}
		w.sup.Supervise(np, w.Replace)
		w.sup.Release(p)
		_ = p.Stop(10 * time.Second)
		names = append(names, p.Name())
	}
	return names, errors.Join(errs...)
}
