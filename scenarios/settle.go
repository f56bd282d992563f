package scenarios

import (
	"context"
	"fmt"
	"time"

	"github.com/outboxchaos/outboxchaos/checker"
	"github.com/outboxchaos/outboxchaos/history"
	"github.com/outboxchaos/outboxchaos/system/outbox"
)

// deferredHorizon: a PENDING row due this far past the virtual now is
// deferred (the ad cut-off), not stuck.
const deferredHorizon = time.Hour

// deferred reports whether an outbox row waits on purpose: PENDING and due
// past the horizon, or outside the relay's window.
func (e *Env) deferred(status string, due, now time.Time) bool {
	return status == outbox.StatusPending && (due.After(now.Add(deferredHorizon)) || !e.Cfg.InRelayWindow(now))
}

// WaitSettled waits for quiescence (checker.Quiescent), jumping the
// run's clock to the next due timer when nothing is in flight (jump.go).
// Each look reads only what Quiescent judges (settleLook); the verdict's
// snapshot is read once, after.
func (e *Env) WaitSettled(ctx context.Context, timeout time.Duration) error {
	return e.WaitFor(ctx, timeout, "quiescence", func(ctx context.Context) (bool, error) {
		s, err := e.settleLook(ctx)
		if err != nil {
			return false, err
		}
		if checker.Quiescent(s) {
			return true, nil
		}
		return false, e.maybeJump(ctx, s)
	})
}

// settleLook reads the part of the state checker.Quiescent judges, so that
// Quiescent answers on it as it would on a whole Snapshot: the outbox's
// ids, statuses and deferrals, the inbox's message ids, statuses and
// whether a reconciler will still look a row up, the queues' depths, the
// vendor's held requests and the workers' skips. A parked copy only ever
// accounts for a message, so the parked copies are read (and handed
// back, which the broker takes its time over) only when the rest says
// "not quiescent" and the parking queue holds any. A whole snapshot each
// look read the payloads, the registered numbers, the consents and the
// intents too: about ten statements where this takes two (a random schedule's
// settle looks about 60 times). A peer's run reads a whole snapshot
// (its rows are folded in from the peer's own tables).
func (e *Env) settleLook(ctx context.Context) (checker.State, error) {
	if e.peer() {
		return e.Snapshot(ctx)
	}
	var s checker.State
	now := e.Now()
	rows, err := e.Pool.Query(ctx, `SELECT id, status, next_attempt_at FROM notification_outbox ORDER BY id`)
	if err != nil {
		return s, fmt.Errorf("read outbox statuses: %w", err)
	}
	for rows.Next() {
		var r checker.OutboxRow
		if err := rows.Scan(&r.ID, &r.Status, &r.Due); err != nil {
			rows.Close()
			return s, fmt.Errorf("scan outbox status: %w", err)
		}
		r.Deferred = e.deferred(r.Status, r.Due, now)
		s.Outbox = append(s.Outbox, r)
	}
	if err := rows.Err(); err != nil {
		return s, fmt.Errorf("read outbox statuses: %w", err)
	}
	rows, err = e.Pool.Query(ctx, `SELECT coalesce(message_id, ''), status, coalesce(settled, ''), reconcile_tries FROM notification_histories ORDER BY id`)
	if err != nil {
		return s, fmt.Errorf("read inbox statuses: %w", err)
	}
	for rows.Next() {
		var r checker.InboxRow
		var tries int
		if err := rows.Scan(&r.MessageID, &r.Status, &r.Settled, &tries); err != nil {
			rows.Close()
			return s, fmt.Errorf("scan inbox status: %w", err)
		}
		r.Reconcilable = e.reconcilable(r.Status, r.Settled, tries)
		s.Inbox = append(s.Inbox, r)
	}
	if err := rows.Err(); err != nil {
		return s, fmt.Errorf("read inbox statuses: %w", err)
	}
	s.VendorHeld = e.vendor.Held()
	for _, ev := range e.Events(history.Skip) {
		if m := ev.Str(history.KeyMessageID); m != "" {
			s.WorkerSkips = append(s.WorkerSkips, m)
		}
	}
	if d, derr := e.depths(); derr == nil {
		s.Queues = d
	} // else: queues not declared yet (no worker ran), nothing queued, as Snapshot reads it
	if checker.Quiescent(s) || s.Queues.Parking == 0 {
		return s, nil
	}
	s.Parked, s.Queues, err = e.queues(ctx)
	return s, err
}
