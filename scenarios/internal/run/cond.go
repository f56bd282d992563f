package run

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/outboxchaos/outboxchaos/checker"
	"github.com/outboxchaos/outboxchaos/faults"
	"github.com/outboxchaos/outboxchaos/rig"
	"github.com/outboxchaos/outboxchaos/scenarios/scenario"
)

// probe evaluates a condition against the live run. base holds, for each
// fresh event condition, the count when the step began.
type probe struct {
	r    *runner
	base map[*scenario.EventCond]int
	// traffic holds each traffic condition's count when the probe began.
	traffic map[*scenario.TrafficCond]int64
	dedup   *dedupProbe    // a dedup_expired wait's probe
	faults  []faults.Fault // a during step's faults, for fired
}

func (r *runner) newProbe(c *scenario.Cond) *probe {
	p := &probe{r: r, base: map[*scenario.EventCond]int{}, traffic: map[*scenario.TrafficCond]int64{}}
	var walk func(c *scenario.Cond)
	walk = func(c *scenario.Cond) {
		if c.Traffic != nil {
			if n, err := r.trafficCount(c.Traffic); err == nil {
				p.traffic[c.Traffic] = n
			}
		}
		if c.Event != nil && c.Event.Fresh {
			p.base[c.Event] = checker.Count(r.e.history(), c.Event.Name, c.Event.Pod, c.Event.Attrs)
		}
		for i := range c.Any {
			walk(&c.Any[i])
		}
		for i := range c.All {
			walk(&c.All[i])
		}
	}
	walk(c)
	return p
}

// errFailed marks a condition that can no longer come (a pod that exited
// the wrong way): waiting stops at once.
var errFailed = errors.New("condition failed")

// holding is how the runner probes each registered condition, by its
// name in conditions.
var holding = map[string]func(ctx context.Context, p *probe, c *scenario.Cond) (bool, error){
	"rows":          holdsRows,
	"ledger":        holdsLedger,
	"event":         holdsEvent,
	"no_event":      holdsNoEvent,
	"killed":        holdsKilled,
	"paused":        holdsPaused,
	"exited":        holdsExited,
	"succeeded":     holdsSucceeded,
	"in_flight":     holdsInFlight,
	"copies":        holdsCopies,
	"peek_skips":    holdsPeekSkips,
	"waiters":       holdsWaiters,
	"migrators":     holdsMigrators,
	"queue":         holdsQueue,
	"blocked":       holdsBlocked,
	"fired":         holdsFired,
	"traffic":       holdsTraffic,
	"dedup_expired": holdsDedupExpired,
}

func (p *probe) holds(ctx context.Context, c *scenario.Cond) (bool, error) {
	if name := c.Kind(); name != "" {
		return holding[name](ctx, p, c)
	}
	if len(c.Any) > 0 {
		var errs []error
		for i := range c.Any {
			ok, err := p.holds(ctx, &c.Any[i])
			if ok && err == nil {
				return true, nil
			}
			errs = append(errs, err)
		}
		return false, errors.Join(errs...)
	}
	for i := range c.All {
		if ok, err := p.holds(ctx, &c.All[i]); !ok || err != nil {
			return false, err
		}
	}
	return true, nil
}

// killed: the pod exited at its kill-point (SIGKILL, exit 137).
func (p *probe) killed(name string) (bool, error) {
	pod, err := p.r.e.Pod(name)
	if err != nil {
		return false, err
	}
	select {
	case <-pod.Done():
	default:
		return false, nil
	}
	if _, hit := pod.Killpoint(); !hit || pod.ExitCode() != 137 {
		return false, fmt.Errorf("%w: %s exited %d without hitting its kill-point", errFailed, name, pod.ExitCode())
	}
	p.r.e.Logf("harness", "%s killed by SIGKILL at its kill-point", name)
	return true, nil
}

// exited: every pod matching name ("role-" for all of a role) exited; with
// ok, each with status 0.
func (p *probe) exited(name string, ok bool) (bool, error) {
	var found bool
	for _, pod := range p.r.e.Pods() {
		if pod.Name() != name && !(strings.HasSuffix(name, "-") && strings.HasPrefix(pod.Name(), name)) {
			continue
		}
		found = true
		select {
		case <-pod.Done():
		default:
			return false, nil
		}
		if ok && pod.ExitCode() != 0 {
			return false, fmt.Errorf("%w: %s exited %d: %s", errFailed, pod.Name(), pod.ExitCode(), pod.Output())
		}
	}
	if !found {
		return false, fmt.Errorf("no pod %q", name)
	}
	return true, nil
}

// migrators counts the migrate pods waiting on the held migration: polling
// the advisory lock, or blocked behind the uncommitted table.
func (p *probe) migrators(ctx context.Context, want int) (bool, error) {
	h, err := p.r.hold()
	if err != nil {
		return false, err
	}
	bs, err := rig.PodBackends(ctx, p.r.e.Pool, p.r.e.appPrefix(), "migrate")
	if err != nil {
		return false, err
	}
	n := 0
	for _, b := range bs {
		if strings.Contains(b.Query, "pg_try_advisory_lock") || slices.Contains(b.BlockedBy, h.PID()) {
			n++
		}
	}
	return n == want, nil
}

// blocked: a connection of the pod waits, inside Postgres, on a lock the
// step's hold owns (not just any waiter: the cleanup's sweep may wait too).
func (p *probe) blocked(ctx context.Context, pod string) (bool, error) {
	h, err := p.r.hold()
	if err != nil {
		return false, err
	}
	role, _, _ := strings.Cut(pod, "-")
	bs, err := rig.PodBackends(ctx, p.r.e.Pool, p.r.e.appPrefix(), role)
	if err != nil {
		return false, err
	}
	for _, b := range bs {
		if b.Pod == pod && slices.Contains(b.BlockedBy, h.PID()) {
			return true, nil
		}
	}
	return false, nil
}
