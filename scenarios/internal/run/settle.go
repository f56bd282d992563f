package run

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/outboxchaos/outboxchaos/checker"
	"github.com/outboxchaos/outboxchaos/history"
	"github.com/outboxchaos/outboxchaos/rig"
	"github.com/outboxchaos/outboxchaos/system/broker"
)

// deferredHorizon: a PENDING row due this far past the virtual now is
// deferred (the ad cut-off), not stuck.
const deferredHorizon = time.Hour

// deferred reports whether an outbox row waits on purpose: PENDING and,
// on the clock of every relay (relayNows), worked only past the horizon
// (worksAt). A row a relay outside its window works when the window opens
// a moment later is not deferred: a run that started at 07:59:59 waits
// for 08:00, or its verdict, read a moment after the settle's look, would
// find the row due and call it stuck.
func (e *Env) deferred(status string, due time.Time, relayNows []time.Time) bool {
	if status != history.OutboxPending {
		return false
	}
	for _, now := range relayNows {
		if !e.worksAt(due, now).After(now.Add(deferredHorizon)) {
			return false
		}
	}
	return true
}

// worksAt is when a relay whose clock reads now next works a PENDING row
// due at due: at due inside its window, else not before the window opens.
func (e *Env) worksAt(due, now time.Time) time.Time {
	if e.Cfg.InRelayWindow(now) {
		return due
	}
	open := e.Cfg.RelayFrom.On(now)
	if !open.After(now) {
		open = e.Cfg.RelayFrom.On(now.Add(24 * time.Hour))
	}
	if due.After(open) {
		return due
	}
	return open
}

// relayNows are the clocks of the run's relays (those that ran as well as
// those that run, so the verdict's look after the pods stopped agrees with
// the settle's), each read now: the run's clock, or the one a clock fault
// gave the pod (a relay a day ahead works through rows the run's clock
// would call outside its window). With no relay it is the run's clock.
func (e *Env) relayNows(now time.Time) []time.Time {
	var out []time.Time
	for _, p := range e.Pods() {
		if e.roleOf(p.Name()) != "relay" {
			continue
		}
		t := now
		if c, ok := podClock(p.Env()); ok {
			t = c.Now()
		}
		out = append(out, t)
	}
	if len(out) == 0 {
		out = append(out, now)
	}
	return out
}

// WaitSettled waits for quiescence (checker.Quiescent), jumping the
// run's clock to the next due timer when nothing is in flight (jump.go).
// Each look reads only what Quiescent judges (settleLook); the verdict's
// snapshot is read once, after. When the bound passes while the latest
// look could not read the state (a broker or database that does not
// answer), the error is an UnreadError: the run is not judged.
func (e *Env) WaitSettled(ctx context.Context, timeout time.Duration) error {
	return waitQuiescent(ctx, timeout, e.settleLook, e.maybeJump, rig.WaitFor)
}

// waitFunc polls cond until it holds or the timeout passes (rig.WaitFor).
type waitFunc func(ctx context.Context, timeout time.Duration, what string, cond func(ctx context.Context) (bool, error)) error

// waitQuiescent polls look through wait until its state is quiescent,
// calling jump on each state that is not. A look the wait's own deadline
// cut short says nothing about the run and leaves the latest look's
// outcome as it was.
func waitQuiescent(ctx context.Context, timeout time.Duration, look func(context.Context) (checker.State, error),
	jump func(context.Context, checker.State) error, wait waitFunc) error {
	var unread error
	err := wait(ctx, timeout, "quiescence", func(wctx context.Context) (bool, error) {
		s, err := look(wctx)
		if err != nil {
			if wctx.Err() == nil {
				unread = err
			}
			return false, err
		}
		unread = nil
		if checker.Quiescent(s) {
			return true, nil
		}
		return false, jump(wctx, s)
	})
	if err != nil && unread != nil && ctx.Err() == nil && errors.Is(err, rig.ErrTimeout) {
		return &UnreadError{Bound: timeout, Err: unread}
	}
	return err
}

// UnreadError: the settle bound passed while the harness could not read
// the run's state. Whether the pipeline settled is unknown, so its rows
// in flight are not judged stuck: the run is not judged.
type UnreadError struct {
	Bound time.Duration
	Err   error
}

func (u *UnreadError) Error() string {
	return fmt.Sprintf("the state could not be read when the settle bound (%s) passed: %v", u.Bound, u.Err)
}

func (u *UnreadError) Unwrap() error { return u.Err }

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
	relays := e.relayNows(e.Now())
	rows, err := e.Pool.Query(ctx, `SELECT id, status, next_attempt_at FROM notification_outbox ORDER BY id`)
	if err == nil {
		s.Outbox, err = pgx.CollectRows(rows, func(row pgx.CollectableRow) (r checker.OutboxRow, err error) {
			err = row.Scan(&r.ID, &r.Status, &r.Due)
			r.Deferred = e.deferred(r.Status, r.Due, relays)
			return r, err
		})
	}
	if err != nil {
		return s, fmt.Errorf("read outbox statuses: %w", err)
	}
	rows, err = e.Pool.Query(ctx, `SELECT coalesce(message_id, ''), status, coalesce(settled, ''), reconcile_tries FROM notification_histories ORDER BY id`)
	if err == nil {
		s.Inbox, err = pgx.CollectRows(rows, func(row pgx.CollectableRow) (r checker.InboxRow, err error) {
			var tries int
			err = row.Scan(&r.MessageID, &r.Status, &r.Settled, &tries)
			r.Reconcilable = e.reconcilable(r.Status, r.Settled, tries)
			return r, err
		})
	}
	if err != nil {
		return s, fmt.Errorf("read inbox statuses: %w", err)
	}
	s.VendorHeld, s.WorkerSkips, s.WorkerHeld = e.vendor.Held(), e.workerSkips(), e.WorkerHeld()
	switch d, derr := e.depths(); {
	case derr == nil:
		s.Queues = d
	case broker.IsNotFound(derr):
		// Queues not declared yet (no worker ran): nothing queued, as
		// Snapshot reads it.
	default:
		// A broker that does not answer now (restarting, frozen) may
		// hold every message the outbox calls published: that is no
		// quiescence, and no verdict. Look again.
		return s, fmt.Errorf("read queue depths: %w", derr)
	}
	if checker.Quiescent(s) || s.Queues.Parking == 0 {
		return s, nil
	}
	s.Parked, s.Queues, err = e.queues(ctx)
	return s, err
}

// workerSkips are the message ids the workers logged skipping.
func (e *Env) workerSkips() []string {
	var out []string
	for _, ev := range e.Events(history.Skip) {
		if m := ev.Str(history.KeyMessageID); m != "" {
			out = append(out, m)
		}
	}
	return out
}

// WorkerHeld counts the deliveries the running workers hold: a worker
// whose last delivery is not yet followed by its ack, its requeue, or the
// failure of either (every way a worker lets go of a delivery logs one of
// these). A frozen worker holds its delivery until it is continued and is
// not counted, as the settle never waited on a frozen pod; an exited
// one's delivery is back in the queue, where the depths count it. The
// broker counts a held delivery as unacked, which no look at the queues'
// ready counts sees.
func (e *Env) WorkerHeld() int {
	n := 0
	for _, p := range e.Pods() {
		if e.roleOf(p.Name()) != "worker" || exited(p) || p.Frozen() {
			continue
		}
		if p.LastOf(deliveryMarks...) == history.Delivery {
			n++
		}
	}
	return n
}

// deliveryMarks are the events that take or let go of a delivery.
var deliveryMarks = []string{history.Delivery, history.Ack, history.AckFailed, history.Requeue, history.NackFailed}

// holdsDelivery reports whether one worker process's events end holding
// a delivery (a worker handles one delivery at a time): whether the last
// of its delivery marks is a delivery.
func holdsDelivery(evs []history.Event) bool {
	return history.LastOf(evs, deliveryMarks...) == history.Delivery
}
