package scenario

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/outboxchaos/outboxchaos/checker"
)

func describeRows(c *Cond) string {
	q, args := c.Rows.SQL()
	return fmt.Sprintf("%d from %s %v", c.Rows.N, q, args)
}

func validateRows(c *Cond) error {
	if _, ok := tables[c.Rows.Table]; !ok {
		return fmt.Errorf("rows: unknown table %q (outbox, inbox, coupons)", c.Rows.Table)
	}
	return nil
}

func describeLedger(c *Cond) string { return fmt.Sprintf("%d messages on handsets", c.Ledger) }

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

func describeKilled(c *Cond) string { return c.Killed + " killed at its kill-point" }

func describePaused(c *Cond) string { return c.Paused + " frozen at its pause-point" }

func describeExited(c *Cond) string { return c.Exited + " exited" }

func describeSucceeded(c *Cond) string { return c.Succeeded + " exited 0" }

func describeInFlight(c *Cond) string {
	return "a vendor call for " + checker.MessageID(c.InFlight) + " in flight"
}

func describeCopies(c *Cond) string { return fmt.Sprintf("%d messages delivered twice", c.Copies) }

func describePeekSkips(c *Cond) string {
	return fmt.Sprintf("%d redeliveries skipped at the peek", c.PeekSkips)
}

func describeWaiters(c *Cond) string {
	return fmt.Sprintf("%d backends waiting on the hold", c.Waiters)
}

func describeMigrators(c *Cond) string {
	return fmt.Sprintf("%d migrators at the held migration", c.Migrators)
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

func describeBlocked(c *Cond) string { return c.Blocked + " waits on the hold inside Postgres" }

func describeFired(*Cond) string { return "the step's faults fired" }

func describeNoEvent(c *Cond) string {
	return fmt.Sprintf("no event %s %s %v", c.NoEvent.Name, c.NoEvent.Pod, c.NoEvent.Attrs)
}

func validateNoEvent(c *Cond) error {
	switch {
	case c.NoEvent.Name == "":
		return errors.New("no_event: needs name")
	case c.NoEvent.N != 0 || c.NoEvent.Fresh:
		return errors.New("no_event: takes name, pod and attrs only (no n, no fresh)")
	}
	return nil
}

func describeDedupExpired(*Cond) string {
	return "JetStream's duplicate window passed for every id published so far"
}
