package faults

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/outboxchaos/outboxchaos/history"
	"github.com/outboxchaos/outboxchaos/system/notification"
)

// Sigterm asks a pod to stop, as a deployment's rollout would: SIGTERM,
// then SIGKILL if it has not exited within 10 s. It fired when the pod
// exited.
type Sigterm struct {
	Pod string
}

// Family is "sigterm".
func (s *Sigterm) Family() string { return KindSigterm }

// Target is the pod.
func (s *Sigterm) Target() string { return s.Pod }

// Inject stops the pod and waits for it to exit.
func (s *Sigterm) Inject(_ context.Context, w World) error {
	p, err := w.Pod(s.Pod)
	if err != nil {
		return err
	}
	w.Logf("harness", "SIGTERM %s", s.Pod)
	return p.Stop(10 * time.Second)
}

// Momentary: the signal is sent as it is injected.
func (*Sigterm) Momentary() {}

// Recover does nothing: the scenario starts a new pod if it wants one.
func (s *Sigterm) Recover(context.Context, World) error { return nil }

// Fired reports whether the pod exited.
func (s *Sigterm) Fired(w World) (bool, string) {
	p, err := w.Pod(s.Pod)
	if err != nil {
		return false, err.Error()
	}
	select {
	case <-p.Done():
		return true, fmt.Sprintf("%s exited %d", s.Pod, p.ExitCode())
	default:
		return false, s.Pod + " still running"
	}
}

func (s *Sigterm) String() string { return "SIGTERM " + s.Pod }

// Unbind is an operator removing the main queue's binding: mandatory
// publishes come back returned until Recover binds it again. It fired
// when a publish came back returned.
type Unbind struct{}

// Family is "unbind".
func (*Unbind) Family() string { return KindUnbind }

// Target is the main queue.
func (*Unbind) Target() string { return "main queue" }

// Inject unbinds the main queue.
func (*Unbind) Inject(ctx context.Context, w World) error { return w.Broker().SetBinding(ctx, false) }

// Recover binds it again.
func (*Unbind) Recover(ctx context.Context, w World) error { return w.Broker().SetBinding(ctx, true) }

// Fired reports whether a relay saw a publish returned.
func (*Unbind) Fired(w World) (bool, string) {
	for _, p := range w.Pods() {
		for _, e := range p.Events() {
			if e.Name == history.Publish && e.Str(history.KeyOutcome) == history.OutcomeReturned {
				return true, "publish returned to " + p.Name()
			}
		}
	}
	return false, "no publish came back returned"
}

func (*Unbind) String() string { return "unbind the main queue" }

// ReplayParked is an operator moving a parked message back to the main
// queue (the first time taking it out of parking; again, the same copy).
// It fired when the parked copy was found and replayed.
type ReplayParked struct {
	Msg int64

	mu     sync.Mutex
	reason string
}

// Family is "replay-parked".
func (r *ReplayParked) Family() string { return KindReplayParked }

// Target is the message.
func (r *ReplayParked) Target() string { return notification.MessageID(r.Msg) }

// Inject replays the parked copy.
func (r *ReplayParked) Inject(ctx context.Context, w World) error {
	reason, err := w.Broker().ReplayParked(ctx, notification.MessageID(r.Msg))
	if err == nil {
		r.mu.Lock()
		r.reason = reason
		r.mu.Unlock()
	}
	return err
}

// Momentary: the replay is done as it is injected.
func (*ReplayParked) Momentary() {}

// Recover does nothing: a replay cannot be taken back.
func (r *ReplayParked) Recover(context.Context, World) error { return nil }

// Fired reports whether the parked copy was replayed.
func (r *ReplayParked) Fired(World) (bool, string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.reason != "", "parked for " + r.reason
}

func (r *ReplayParked) String() string { return "replay parked " + notification.MessageID(r.Msg) }

// HoldRows keeps a transaction open that row-locks the first Rows PENDING
// outbox rows in claim order, as a relay part-way through its claim does.
// It fires by being held until the step's condition: the engine judges it.
type HoldRows struct {
	Rows int
	held
}

// Family is "hold-rows".
func (h *HoldRows) Family() string { return KindHoldRows }

// Target is the outbox.
func (h *HoldRows) Target() string { return "outbox" }

// Inject takes the row locks.
func (h *HoldRows) Inject(ctx context.Context, w World) error {
	hd, ids, err := holdRows(ctx, w.DB(), h.Rows)
	if err == nil {
		h.set(hd)
		w.Logf("harness", "holding %s: %v", hd.what, ids)
	}
	return err
}

func (h *HoldRows) String() string { return fmt.Sprintf("row locks on %d PENDING outbox rows", h.Rows) }

// HoldMigration plays a migrator part-way through its migration: the
// migration lock taken and the first table created, uncommitted.
type HoldMigration struct {
	held
}

// Family is "hold-migration".
func (h *HoldMigration) Family() string { return KindHoldMigration }

// Target is the schema.
func (h *HoldMigration) Target() string { return "schema" }

// Inject takes the lock and starts the migration.
func (h *HoldMigration) Inject(ctx context.Context, w World) error {
	hd, err := holdMigration(ctx, w.DB())
	if err == nil {
		h.set(hd)
		w.Logf("harness", "holding %s", hd.what)
	}
	return err
}

func (h *HoldMigration) String() string { return "a half-done migration holding the migration lock" }

// held is the common part of the holds.
type held struct {
	h atomic.Pointer[Hold]
}

func (h *held) set(hd *Hold) { h.h.Store(hd) }

// Hold is the open transaction while the fault is in place (nil before).
func (h *held) Hold() *Hold { return h.h.Load() }

// Recover commits the transaction, letting every waiter go.
func (h *held) Recover(ctx context.Context, _ World) error {
	return h.Hold().Release(context.WithoutCancel(ctx))
}

// Fired: a hold fires by being held until its step's condition, which the
// engine judges; in place is all it can say itself.
func (h *held) Fired(World) (bool, string) {
	if h.Hold() == nil {
		return false, "never held"
	}
	return true, "held"
}

// HoldTable keeps a transaction open holding an EXCLUSIVE lock on the
// outbox or inbox table, so the next write to it (the relay's claim, the
// worker's claim INSERT) waits inside PostgreSQL: a statement certainly in
// flight, for a fault (a Postgres crash) to meet. A crash that kills the
// hold's own connection is no failure to release it.
type HoldTable struct {
	Table string // "outbox" or "inbox"
	held
}

// Family is "hold-table".
func (h *HoldTable) Family() string { return KindHoldTable }

// Target is the table.
func (h *HoldTable) Target() string { return h.Table }

// Inject takes the lock.
func (h *HoldTable) Inject(ctx context.Context, w World) error {
	hd, err := holdTable(ctx, w.DB(), holdTables[h.Table])
	if err == nil {
		h.set(hd)
		w.Logf("harness", "holding %s", hd.what)
	}
	return err
}

// Recover releases the lock (nothing to release after a crash).
func (h *HoldTable) Recover(ctx context.Context, _ World) error {
	return h.Hold().ReleaseAfterCrash(context.WithoutCancel(ctx))
}

func (h *HoldTable) String() string { return "an EXCLUSIVE lock on the " + h.Table + " table" }

// HoldInboxRow keeps a transaction open row-locking one message's inbox
// row, so the worker's result UPDATE of it waits inside PostgreSQL.
type HoldInboxRow struct {
	Msg int64 // the outbox id of the message
	held
}

// Family is "hold-inbox-row".
func (h *HoldInboxRow) Family() string { return KindHoldInboxRow }

// Target is the message.
func (h *HoldInboxRow) Target() string { return notification.MessageID(h.Msg) }

// Inject takes the row lock.
func (h *HoldInboxRow) Inject(ctx context.Context, w World) error {
	hd, err := holdInboxRow(ctx, w.DB(), notification.MessageID(h.Msg))
	if err == nil {
		h.set(hd)
		w.Logf("harness", "holding %s", hd.what)
	}
	return err
}

// Recover releases the lock (nothing to release after a crash).
func (h *HoldInboxRow) Recover(ctx context.Context, _ World) error {
	return h.Hold().ReleaseAfterCrash(context.WithoutCancel(ctx))
}

func (h *HoldInboxRow) String() string {
	return "a row lock on the inbox row of " + notification.MessageID(h.Msg)
}

// holdTables maps a hold-table's table to its name.
var holdTables = map[string]string{"outbox": "notification_outbox", "inbox": "notification_histories"}
