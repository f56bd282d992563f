package run

import (
	"context"

	"github.com/outboxchaos/outboxchaos/checker"
	"github.com/outboxchaos/outboxchaos/scenarios/scenario"
)

// The registered conditions' functions, in the order of conditions.

func holdsRows(ctx context.Context, p *probe, c *scenario.Cond) (bool, error) {
	q, args := c.Rows.SQL()
	n, err := p.r.e.Count(ctx, q, args...)
	if err != nil {
		return false, err
	}
	return n == c.Rows.N, nil
}

func holdsLedger(_ context.Context, p *probe, c *scenario.Cond) (bool, error) {
	return len(p.r.e.vendor.Ledger()) >= c.Ledger, nil
}

func holdsEvent(_ context.Context, p *probe, c *scenario.Cond) (bool, error) {
	n := checker.Count(p.r.e.history(), c.Event.Name, c.Event.Pod, c.Event.Attrs) - p.base[c.Event]
	return n >= max(c.Event.N, 1), nil
}

func holdsKilled(_ context.Context, p *probe, c *scenario.Cond) (bool, error) {
	return p.killed(c.Killed)
}

func holdsPaused(_ context.Context, p *probe, c *scenario.Cond) (bool, error) {
	pod, err := p.r.e.Pod(c.Paused)
	if err != nil {
		return false, err
	}
	return pod.Frozen(), nil
}

func holdsExited(_ context.Context, p *probe, c *scenario.Cond) (bool, error) {
	return p.exited(c.Exited, false)
}

func holdsSucceeded(_ context.Context, p *probe, c *scenario.Cond) (bool, error) {
	return p.exited(c.Succeeded, true)
}

// holdsInFlight reads the vendor's call log, not its ledger: a call the
// vendor logged has reached it whether or not its mode records it (a hold
// send never reaches a phone, yet is provably in flight from the moment it
// is logged).
func holdsInFlight(_ context.Context, p *probe, c *scenario.Cond) (bool, error) {
	mid := checker.MessageID(c.InFlight)
	for _, call := range p.r.e.vendor.CallLog() {
		if call.RefKey == mid {
			return true, nil
		}
	}
	return false, nil
}

func holdsCopies(_ context.Context, p *probe, c *scenario.Cond) (bool, error) {
	return checker.Copies(p.r.e.history()) >= c.Copies, nil
}

func holdsPeekSkips(_ context.Context, p *probe, c *scenario.Cond) (bool, error) {
	return checker.PeekSkips(p.r.e.history()) >= c.PeekSkips, nil
}

func holdsWaiters(ctx context.Context, p *probe, c *scenario.Cond) (bool, error) {
	h, err := p.r.hold()
	if err != nil {
		return false, err
	}
	n, err := h.Waiters(ctx)
	return n >= c.Waiters, err
}

func holdsMigrators(ctx context.Context, p *probe, c *scenario.Cond) (bool, error) {
	return p.migrators(ctx, c.Migrators)
}

func holdsQueue(_ context.Context, p *probe, c *scenario.Cond) (bool, error) {
	d, err := p.r.e.depths()
	if err != nil {
		return false, err
	}
	n := map[string]int{"main": d.Main, "retry": d.Retry, "parking": d.Parking}[c.Queue.Queue]
	return n == c.Queue.N, nil
}

func holdsBlocked(ctx context.Context, p *probe, c *scenario.Cond) (bool, error) {
	return p.blocked(ctx, c.Blocked)
}
