package worker_test

import (
	"context"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/outboxchaos/outboxchaos/history"
	"github.com/outboxchaos/outboxchaos/system/broker"
	"github.com/outboxchaos/outboxchaos/system/notification"
	"github.com/outboxchaos/outboxchaos/system/testenv"
	"github.com/outboxchaos/outboxchaos/system/worker"
)

// failures counts the worker's log records with one message.
type failures struct {
	msg string
	n   atomic.Int32
}

func (f *failures) Enabled(context.Context, slog.Level) bool { return true }
func (f *failures) Handle(_ context.Context, r slog.Record) error {
	if r.Message == f.msg {
		f.n.Add(1)
	}
	return nil
}
func (f *failures) WithAttrs([]slog.Attr) slog.Handler { return f }
func (f *failures) WithGroup(string) slog.Handler      { return f }

// A database that fails the worker's peek is the worker's failure, not the
// message's: the worker holds the delivery and asks again, so no hand-back
// counts toward the delivery limit (a copy handed back for each failed
// peek reached the limit within a two-second outage and was parked with a
// PARKED alert, while another copy of it was sent once the database
// answered). Once the database answers, the message is sent once and acked.
func TestPeekFailure_HoldsTheDelivery(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.member(1, true, true)
	ctx := context.Background()
	rename := func(from, to string) {
		t.Helper()
		if _, err := e.db.Pool.Exec(ctx, `ALTER TABLE `+from+` RENAME TO `+to); err != nil {
			t.Fatalf("rename %s: %v", from, err)
		}
	}
	rename("notification_histories", "notification_histories_away")
	peeks := &failures{msg: "peek failed"}
	v := newVendor(e)
	w := worker.New(e.cfg, e.db.Pool, e.clk, v, e.rec, slog.New(peeks))
	mid := notification.MessageID(1)
	ack := &fakeAck{}
	done := make(chan struct{})
	go func() {
		defer close(done)
		// One return short of the limit: a single hand-back would park
		// the next copy.
		w.Handle(ctx, amqp.Delivery{Acknowledger: ack, DeliveryTag: 1, MessageId: mid, Redelivered: true,
			Headers: amqp.Table{"x-delivery-count": int64(e.cfg.DeliveryLimit - 1)}, Body: body(payload(1, 1, notification.GradeRenewal))})
	}()
	testenv.Eventually(t, 30*time.Second, "the worker to fail its peek three times", func() bool { return peeks.n.Load() >= 3 })
	if a, n, _ := ack.counts(); a != 0 || n != 0 {
		t.Fatalf("while the peek fails: %d acks, %d nacks; want the delivery held", a, n)
	}
	rename("notification_histories_away", "notification_histories")
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("Handle still running 30 s after the database answered again")
	}
	if a, n, _ := ack.counts(); a != 1 || n != 0 {
		t.Fatalf("%d acks, %d nacks; want the held delivery acked once, never handed back", a, n)
	}
	if r, ok := e.history(mid); !ok || r.Status != history.InboxSent {
		t.Fatalf("history %+v (%v), want SENT", r, ok)
	}
	if n := e.fv.Count(mid); n != 1 {
		t.Fatalf("ledger count %d, want 1", n)
	}
	if a := e.rec.OfKind(history.AlertParked); len(a) != 0 {
		t.Fatalf("PARKED alerts %+v, want none", a)
	}
}

// The PARKED alert goes out only once the parking queue holds the copy: a
// park the broker refuses (here nothing routes to the parking queue) hands
// the delivery back with no alert, since a later copy may yet be sent.
func TestFailedParkRaisesNoAlert(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.member(1, true, true)
	if err := e.ch.QueueUnbind(e.names.Parking, broker.KeyParking, e.names.Exchange, nil); err != nil {
		t.Fatal(err)
	}
	w := e.newWorker()
	mid := notification.MessageID(1)
	ack := &fakeAck{}
	w.Handle(context.Background(), amqp.Delivery{Acknowledger: ack, DeliveryTag: 1, MessageId: mid, Redelivered: true,
		Headers: amqp.Table{"x-delivery-count": int64(e.cfg.DeliveryLimit)}, Body: body(payload(1, 1, notification.GradeRenewal))})
	if a, n, rq := ack.counts(); a != 0 || n != 1 || rq != 1 {
		t.Fatalf("%d acks, %d nacks (%d requeued); want the delivery handed back", a, n, rq)
	}
	if a := e.rec.OfKind(history.AlertParked); len(a) != 0 {
		t.Fatalf("PARKED alerts %+v for a park that failed, want none", a)
	}
}
