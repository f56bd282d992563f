package scenarios

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/outboxchaos/outboxchaos/checker"
)

// The registered conditions' functions, in the order of conditions.

func describeRows(c *Cond) string {
	q, args := c.Rows.sql()
	return fmt.Sprintf("%d from %s %v", c.Rows.N, q, args)
}

func validateRows(c *Cond) error {
	if _, ok := tables[c.Rows.Table]; !ok {
		return fmt.Errorf("rows: unknown table %q (outbox, inbox, coupons)", c.Rows.Table)
	}
	return nil
}

func holdsRows(ctx context.Context, p *probe, c *Cond) (bool, error) {
	q, args := c.Rows.sql()
	n, err := p.r.e.Count(ctx, q, args...)
	if err != nil {
		return false, err
	}
	return n == c.Rows.N, nil
}

func describeLedger(c *Cond) string { return fmt.Sprintf("%d messages on handsets", c.Ledger) }

func holdsLedger(_ context.Context, p *probe, c *Cond) (bool, error) {
	return len(p.r.e.vendor.Ledger()) >= c.Ledger, nil
}

func describeEvent(c *Cond) string {
	s := fmt.Sprintf("%d× event %s", max(c.Event.N, 1), c.Event.Name)
	if c.Event.Pod != "" {
		s += " " + c.Event.Pod
	}
	if len(c.Event.Attrs) > 0 {
		s += fmt.Sprintf(" %v", c.Event.Attrs)
	}
	return s
}

func validateEvent(c *Cond) error {
	if c.Event.Name == "" {
		return errors.New("event: needs name")
	}
	return nil
}

func holdsEvent(_ context.Context, p *probe, c *Cond) (bool, error) {
	n := checker.Count(p.r.e.history(), c.Event.Name, c.Event.Pod, c.Event.Attrs) - p.base[c.Event]
	return n >= max(c.Event.N, 1), nil
}

func describeKilled(c *Cond) string { return c.Killed + " killed at its kill-point" }

func holdsKilled(_ context.Context, p *probe, c *Cond) (bool, error) { return p.killed(c.Killed) }

func describePaused(c *Cond) string { return c.Paused + " frozen at its pause-point" }

func holdsPaused(_ context.Context, p *probe, c *Cond) (bool, error) {
	pod, err := p.r.e.Pod(c.Paused)
	if err != nil {
		return false, err
	}
	return pod.Frozen(), nil
}

func describeExited(c *Cond) string { return c.Exited + " exited" }

func holdsExited(_ context.Context, p *probe, c *Cond) (bool, error) {
	return p.exited(c.Exited, false)
}

func describeSucceeded(c *Cond) string { return c.Succeeded + " exited 0" }

func holdsSucceeded(_ context.Context, p *probe, c *Cond) (bool, error) {
	return p.exited(c.Succeeded, true)
}

func describeInFlight(c *Cond) string {
	return "a vendor call for " + checker.MessageID(c.InFlight) + " in flight"
}

// holdsInFlight reads the vendor's call log, not its ledger: a call the
// vendor logged has reached it whether or not its mode records it (a hold
// send never reaches a phone, yet is provably in flight from the moment it
// is logged).
func holdsInFlight(_ context.Context, p *probe, c *Cond) (bool, error) {
	mid := checker.MessageID(c.InFlight)
	for _, call := range p.r.e.vendor.CallLog() {
		if call.RefKey == mid {
			return true, nil
		}
	}
	return false, nil
}

func describeCopies(c *Cond) string { return fmt.Sprintf("%d messages delivered twice", c.Copies) }

func holdsCopies(_ context.Context, p *probe, c *Cond) (bool, error) {
	return checker.Copies(p.r.e.history()) >= c.Copies, nil
}

func describePeekSkips(c *Cond) string {
	return fmt.Sprintf("%d redeliveries skipped at the peek", c.PeekSkips)
}

func holdsPeekSkips(_ context.Context, p *probe, c *Cond) (bool, error) {
	return checker.PeekSkips(p.r.e.history()) >= c.PeekSkips, nil
}

func describeWaiters(c *Cond) string {
	return fmt.Sprintf("%d backends waiting on the hold", c.Waiters)
}

func holdsWaiters(ctx context.Context, p *probe, c *Cond) (bool, error) {
	h, err := p.r.hold()
	if err != nil {
		return false, err
	}
	n, err := h.Waiters(ctx)
	return n >= c.Waiters, err
}

func describeMigrators(c *Cond) string {
	return fmt.Sprintf("%d migrators at the held migration", c.Migrators)
}

func holdsMigrators(ctx context.Context, p *probe, c *Cond) (bool, error) {
	return p.migrators(ctx, c.Migrators)
}

func describeQueue(c *Cond) string {
	return fmt.Sprintf("%d ready in the %s queue", c.Queue.N, c.Queue.Queue)
}

func validateQueue(c *Cond) error {
	if !slices.Contains(queueNames, c.Queue.Queue) {
		return fmt.Errorf("queue: unknown queue %q (%s)", c.Queue.Queue, strings.Join(queueNames, ", "))
	}
	return nil
}

func holdsQueue(_ context.Context, p *probe, c *Cond) (bool, error) {
	d, err := p.r.e.depths()
	if err != nil {
		return false, err
	}
	n := map[string]int{"main": d.Main, "retry": d.Retry, "parking": d.Parking}[c.Queue.Queue]
	return n == c.Queue.N, nil
}

func describeBlocked(c *Cond) string { return c.Blocked + " waits on the hold inside Postgres" }

func holdsBlocked(ctx context.Context, p *probe, c *Cond) (bool, error) {
	return p.blocked(ctx, c.Blocked)
}
