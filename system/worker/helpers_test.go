package worker_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/outboxchaos/outboxchaos/fakevendor"
	"github.com/outboxchaos/outboxchaos/history"
	"github.com/outboxchaos/outboxchaos/system/broker"
	"github.com/outboxchaos/outboxchaos/system/clock"
	"github.com/outboxchaos/outboxchaos/system/config"
	"github.com/outboxchaos/outboxchaos/system/inbox"
	"github.com/outboxchaos/outboxchaos/system/notification"
	"github.com/outboxchaos/outboxchaos/system/sms"
	"github.com/outboxchaos/outboxchaos/system/testenv"
	"github.com/outboxchaos/outboxchaos/system/worker"
)

const waitFor = 20 * time.Second // generous: a shared 2-core machine under -race

// env is one worker under test: its own schema, prefix, fake vendor and
// clock.
type env struct {
	t      *testing.T
	db     *testenv.DB
	cfg    config.Config
	clk    *clock.Virtual
	fv     *fakevendor.Server
	rec    *testenv.AlertRecorder
	w      *worker.Worker
	ch     *amqp.Channel
	names  broker.Names
	nextID atomic.Int64
	// vendorAhead puts the vendor's clock this far ahead of the worker's
	// (set before start).
	vendorAhead time.Duration
}

// newEnv builds everything but does not start the worker. The clock reads
// 10:00 Seoul today and runs at real speed.
func newEnv(t *testing.T, tweak ...func(*config.Config)) *env {
	t.Helper()
	db := testenv.NewMigratedSchema(t)
	prefix := testenv.NewPrefix(t)
	c := config.Default()
	c.PGURL, c.AMQPURL, c.Prefix, c.Instance = db.URL, testenv.AMQPURL(), prefix, "worker-test"
	c.Lease, c.ConfirmTimeout = 2*time.Second, 5*time.Second
	c.InListenerDelay, c.RetryTTL = 20*time.Millisecond, 200*time.Millisecond
	c.SendingTimeout = 500 * time.Millisecond
	// Only the timeout test needs a short vendor timeout; elsewhere a
	// short one would turn a slow (loaded) machine into false ERRORs.
	c.VendorTimeout = 5 * time.Second
	for _, f := range tweak {
		f(&c)
	}
	var e *env
	// The vendor shares the worker's clock (a send's expireat is on it),
	// also when a test replaces it before starting the worker.
	fv := fakevendor.New(fakevendor.Options{Account: c.VendorAccount, Password: c.VendorPassword, HangTimeout: 5 * time.Second,
		Clock: func() time.Time { return e.clk.Now().Add(e.vendorAhead) }})
	base, err := fv.Start("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = fv.Close() })
	c.VendorURL = base
	e = &env{t: t, db: db, cfg: c, clk: clock.NewVirtual(clock.At(time.Now(), 10, 0), 1), fv: fv, rec: &testenv.AlertRecorder{},
		names: broker.NamesFor(prefix)}
	e.nextID.Store(1000)
	e.ch = testenv.AMQPChannel(t) // c.AMQPURL is testenv.AMQPURL()
	if err := broker.TopologyOf(c).Declare(e.ch); err != nil {
		t.Fatal(err)
	}
	if err := e.ch.Confirm(false); err != nil {
		t.Fatal(err)
	}
	return e
}

func (e *env) newWorker() *worker.Worker {
	return worker.New(e.cfg, e.db.Pool, e.clk, newVendor(e), e.rec, slog.New(slog.DiscardHandler))
}

// newVendor is a client of e's fake vendor.
func newVendor(e *env) *sms.Client {
	return sms.New(e.cfg.VendorURL, e.cfg.VendorAccount, e.cfg.VendorPassword, e.cfg.VendorTimeout)
}

// start starts the worker; it is stopped in cleanup (before the vendor and
// the queues go away).
func (e *env) start() {
	e.t.Helper()
	e.w = e.newWorker()
	if err := e.w.Start(context.Background()); err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(e.w.Stop)
}

// member adds a member whose phone follows jobs.Phone.
func (e *env) member(id int64, consent, registered bool) {
	e.t.Helper()
	ctx := context.Background()
	phone := fmt.Sprintf("010%08d", id)
	if _, err := e.db.Pool.Exec(ctx, `INSERT INTO members (id, name, phone, sms_consent) VALUES ($1, $2, $3, $4)`,
		id, fmt.Sprintf("회원%d", id), phone, consent); err != nil {
		e.t.Fatal(err)
	}
	if registered {
		if _, err := e.db.Pool.Exec(ctx, `INSERT INTO registered_numbers (phone) VALUES ($1)`, phone); err != nil {
			e.t.Fatal(err)
		}
	}
}

// payload is a valid message of kind for member, as the relay publishes it
// for outbox row outboxID.
func payload(outboxID, member int64, kind notification.Kind) notification.Payload {
	tpl, _ := notification.TemplateFor(kind)
	return notification.Payload{
		OutboxID: outboxID, DedupKey: fmt.Sprintf("%s:%d", kind, outboxID), Kind: kind, MemberID: member,
		Phone: fmt.Sprintf("010%08d", member), Template: tpl.Code,
		Variables:   map[string]string{"name": "회원", "grade": "GOLD", "award": "상", "deadline": "2025-01-01", "years": "1"},
		Advertising: kind.Advertising(), ScheduledDate: time.Now().In(clock.Seoul).Format(time.DateOnly),
	}
}

func body(p notification.Payload) []byte {
	b, err := json.Marshal(p)
	if err != nil {
		panic(err)
	}
	return b
}

// publish puts one message on the main queue (routing key send), confirmed.
func (e *env) publish(messageID string, b []byte, headers amqp.Table) {
	e.t.Helper()
	dc, err := e.ch.PublishWithDeferredConfirmWithContext(context.Background(), e.names.Exchange, broker.KeySend, true, false,
		amqp.Publishing{MessageId: messageID, DeliveryMode: amqp.Persistent, ContentType: "application/json", Body: b, Headers: headers})
	if err != nil {
		e.t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	defer cancel()
	if ok, err := dc.WaitContext(ctx); err != nil || !ok {
		e.t.Fatalf("publish %s not confirmed: %v %v", messageID, ok, err)
	}
}

// publishPayload publishes p under its message_id and returns it.
func (e *env) publishPayload(p notification.Payload) string {
	mid := notification.MessageID(p.OutboxID)
	e.publish(mid, body(p), nil)
	return mid
}

func (e *env) history(mid string) (inbox.Row, bool) {
	e.t.Helper()
	rows, err := inbox.All(context.Background(), e.db.Pool)
	if err != nil {
		e.t.Fatal(err)
	}
	for _, r := range rows {
		if r.MessageID == mid {
			return r, true
		}
	}
	return inbox.Row{}, false
}

func (e *env) historyCount() int {
	e.t.Helper()
	rows, err := inbox.All(context.Background(), e.db.Pool)
	if err != nil {
		e.t.Fatal(err)
	}
	return len(rows)
}

// waitStatus waits until mid's history row has status.
func (e *env) waitStatus(mid, status string) inbox.Row {
	e.t.Helper()
	var r inbox.Row
	testenv.Eventually(e.t, waitFor, mid+" "+status, func() bool {
		var ok bool
		r, ok = e.history(mid)
		return ok && r.Status == status
	})
	return r
}

// sentinel publishes a fresh valid message and waits until it is SENT. The
// queue has one active consumer with prefetch 1, so every message published
// before the sentinel has been handled once it returns.
func (e *env) sentinel() {
	e.t.Helper()
	id := e.nextID.Add(1)
	e.member(id, true, true)
	e.waitStatus(e.publishPayload(payload(id, id, notification.GradeRenewal)), history.InboxSent)
}

// calls counts the send requests the vendor received for refkey.
func (e *env) calls(refkey string) int {
	n := 0
	for _, c := range e.fv.CallLog() {
		if c.RefKey == refkey {
			n++
		}
	}
	return n
}

// parked waits for one message on the parking queue and returns it.
func (e *env) parked() amqp.Delivery {
	e.t.Helper()
	var d amqp.Delivery
	testenv.Eventually(e.t, waitFor, "a parked message", func() bool {
		var ok bool
		var err error
		d, ok, err = e.ch.Get(e.names.Parking, true)
		if err != nil {
			e.t.Fatal(err)
		}
		return ok
	})
	return d
}

// expectParked waits for mid on the parking queue with reason, and checks
// nothing was claimed or sent for it.
func (e *env) expectParked(mid, reason string) amqp.Delivery {
	e.t.Helper()
	d := e.parked()
	if d.MessageId != mid {
		e.t.Fatalf("parked %q, want %q", d.MessageId, mid)
	}
	if got, _ := d.Headers[broker.HeaderFailureReason].(string); got != reason {
		e.t.Fatalf("parked %s with reason %q, want %q", mid, got, reason)
	}
	// A pre-check block parks without a history row; a park after the
	// vendor's refusals or at the delivery limit is on record as FAILED
	// (written once the copy is parked and alerted: waited for).
	if strings.HasPrefix(reason, "VENDOR_REJECTED:") || strings.HasPrefix(reason, "DELIVERY_LIMIT") {
		testenv.Eventually(e.t, 10*time.Second, fmt.Sprintf("FAILED history row for parked %s", mid), func() bool {
			r, ok := e.history(mid)
			return ok && r.Status == history.InboxFailed
		})
	} else if _, ok := e.history(mid); ok {
		e.t.Fatalf("parked %s left a history row", mid)
	}
	if n := e.fv.Count(mid); n != 0 {
		e.t.Fatalf("parked %s reached a phone %d times", mid, n)
	}
	// The worker alerts after the copy is parked: wait for the alert.
	testenv.Eventually(e.t, 10*time.Second, fmt.Sprintf("PARKED alert for %s (%s)", mid, reason), func() bool {
		for _, a := range e.rec.OfKind(history.AlertParked) {
			if a.MessageID == mid && a.Reason == reason {
				return true
			}
		}
		return false
	})
	return d
}

// fakeAck is an amqp.Acknowledger that records how a delivery was settled.
// onAck, if set, runs before an ack is counted.
type fakeAck struct {
	mu                    sync.Mutex
	acks, nacks, requeued int
	onAck                 func()
}

func (f *fakeAck) Ack(uint64, bool) error {
	if f.onAck != nil {
		f.onAck()
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.acks++
	return nil
}

func (f *fakeAck) Nack(_ uint64, _ bool, requeue bool) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.nacks++
	if requeue {
		f.requeued++
	}
	return nil
}

func (f *fakeAck) Reject(_ uint64, requeue bool) error { return f.Nack(0, false, requeue) }

func (f *fakeAck) counts() (acks, nacks, requeued int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.acks, f.nacks, f.requeued
}
