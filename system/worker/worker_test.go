package worker_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/outboxchaos/outboxchaos/fakevendor"
	"github.com/outboxchaos/outboxchaos/history"
	"github.com/outboxchaos/outboxchaos/system/broker"
	"github.com/outboxchaos/outboxchaos/system/clock"
	"github.com/outboxchaos/outboxchaos/system/config"
	"github.com/outboxchaos/outboxchaos/system/notification"
	"github.com/outboxchaos/outboxchaos/system/testenv"
)

// design §5 happy path: one message, one SENT history row, one handset
// delivery with refkey = message_id.
func TestHappyPath_SentOnce(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.member(1, true, true)
	e.start()
	mid := e.publishPayload(payload(1, 1, notification.GradeRenewal))
	r := e.waitStatus(mid, history.InboxSent)
	if r.VendorCode == nil || *r.VendorCode != "1000" || r.OutboxID != 1 || r.DedupKey != "GRADE_RENEWAL:1" || r.Phone != "01000000001" {
		t.Fatalf("history row %+v", r)
	}
	if n := e.fv.Count(mid); n != 1 {
		t.Fatalf("ledger count %d, want 1", n)
	}
	l := e.fv.Ledger()
	if len(l) != 1 || l[0].RefKey != mid || l[0].Phone != "01000000001" || !strings.Contains(l[0].Text, "GOLD") {
		t.Fatalf("ledger %+v", l)
	}
	testenv.Eventually(t, waitFor, "main queue drained", func() bool {
		m, _, _, err := broker.Depths(e.ch, e.cfg.Prefix)
		return err == nil && m == 0
	})
}

// design §4–§5: republishes, redeliveries and replays carry the same
// message_id; five copies reach the handset once.
func TestDuplicateCopies_SentOnce(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.member(1, true, true)
	e.start()
	p := payload(1, 1, notification.GradeRenewal)
	var mid string
	for range 5 {
		mid = e.publishPayload(p)
	}
	e.sentinel()
	if n := e.fv.Count(mid); n != 1 {
		t.Fatalf("ledger count %d, want 1", n)
	}
	if n := e.calls(mid); n != 1 {
		t.Fatalf("%d vendor calls, want 1", n)
	}
	if r, _ := e.history(mid); r.Status != history.InboxSent {
		t.Fatalf("history %+v", r)
	}
}

// design §5: the peek is not a guard. Copies that all passed the peek and
// the pre-checks race on the claim; only the winner calls the vendor, and
// every copy is acked. The claim INSERTs are held back by a SHARE lock on
// the inbox (which the peek's SELECT does not conflict with) until every
// copy is waiting on it.
func TestConcurrentCopiesPastPeek_OneVendorCall(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.member(1, true, true)
	w := e.newWorker()
	p := payload(1, 1, notification.GradeRenewal)
	mid := notification.MessageID(1)
	ctx := context.Background()
	locker, err := pgx.Connect(ctx, e.db.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer locker.Close(ctx)
	tx, err := locker.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, `LOCK TABLE notification_histories IN SHARE MODE`); err != nil {
		t.Fatal(err)
	}
	const copies = 2
	acks := make([]*fakeAck, copies)
	var wg sync.WaitGroup
	for i := range acks {
		acks[i] = &fakeAck{}
		wg.Add(1)
		go func() {
			defer wg.Done()
			w.Handle(ctx, amqp.Delivery{Acknowledger: acks[i], DeliveryTag: uint64(i + 1), MessageId: mid, Body: body(p)})
		}()
	}
	waitingClaims(t, e, copies)
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	if n := e.calls(mid); n != 1 {
		t.Fatalf("%d vendor calls from %d copies past the peek, want 1", n, copies)
	}
	if n := e.fv.Count(mid); n != 1 {
		t.Fatalf("ledger count %d, want 1", n)
	}
	for i, a := range acks {
		if ack, nack, _ := a.counts(); ack != 1 || nack != 0 {
			t.Fatalf("copy %d: %d acks, %d nacks; want acked once", i, ack, nack)
		}
	}
	if r, _ := e.history(mid); r.Status != history.InboxSent {
		t.Fatalf("history %+v", r)
	}
}

// waitingClaims waits until n claim INSERTs wait for the lock on the inbox,
// i.e. n copies are past the peek and the pre-checks.
func waitingClaims(t *testing.T, e *env, n int) {
	t.Helper()
	ctx := context.Background()
	probe, err := pgx.Connect(ctx, e.db.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer probe.Close(ctx)
	testenv.Eventually(t, waitFor, "claims waiting on the inbox lock", func() bool {
		var waiting int
		if err := probe.QueryRow(ctx, `SELECT count(*) FROM pg_locks
			WHERE relation = 'notification_histories'::regclass AND NOT granted`).Scan(&waiting); err != nil {
			t.Fatal(err)
		}
		return waiting == n
	})
}

// design §5: steps 3–5 are not cancellable. A worker told to stop while its
// claim is in flight still completes the claim, the send and the result.
func TestStopAfterClaimStarted_StillCompletes(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.member(1, true, true)
	w := e.newWorker()
	p := payload(1, 1, notification.GradeRenewal)
	mid := notification.MessageID(1)
	bg := context.Background()
	locker, err := pgx.Connect(bg, e.db.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer locker.Close(bg)
	tx, err := locker.Begin(bg)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(bg, `LOCK TABLE notification_histories IN SHARE MODE`); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(bg)
	ack := &fakeAck{}
	done := make(chan struct{})
	go func() {
		defer close(done)
		w.Handle(ctx, amqp.Delivery{Acknowledger: ack, DeliveryTag: 1, MessageId: mid, Body: body(p)})
	}()
	waitingClaims(t, e, 1)
	cancel() // the worker is stopping
	if err := tx.Commit(bg); err != nil {
		t.Fatal(err)
	}
	<-done
	if a, n, _ := ack.counts(); a != 1 || n != 0 {
		t.Fatalf("%d acks, %d nacks; want acked once", a, n)
	}
	if r, ok := e.history(mid); !ok || r.Status != history.InboxSent {
		t.Fatalf("history %+v (%v), want SENT", r, ok)
	}
	if n := e.fv.Count(mid); n != 1 {
		t.Fatalf("ledger count %d, want 1", n)
	}
}

// The worker enforces the delivery limit itself: a delivery that has been
// returned DeliveryLimit times is parked with its x-failure-reason and a
// PARKED alert, before anything else. RabbitMQ's own x-delivery-limit sits
// DeliverySlack returns higher. Left to RabbitMQ (as before), a worker
// killed on the last delivery let the broker dead-letter the message with
// neither reason nor alert: a silent loss the scenario
// worker-crash-on-last-delivery found.
func TestDeliveryLimit_WorkerParksWithReason(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.member(1, true, true)
	w := e.newWorker()
	mid := notification.MessageID(1)
	stopped, cancel := context.WithCancel(context.Background())
	cancel()
	below := &fakeAck{}
	w.Handle(stopped, amqp.Delivery{Acknowledger: below, DeliveryTag: 1, MessageId: mid, Redelivered: true,
		Headers: amqp.Table{"x-delivery-count": int64(e.cfg.DeliveryLimit - 1)}, Body: body(payload(1, 1, notification.GradeRenewal))})
	if _, nacks, rq := below.counts(); nacks != 1 || rq != 1 {
		t.Fatalf("below the limit: nacks %d requeued %d, want one requeue", nacks, rq)
	}
	if a := e.rec.OfKind(history.AlertParked); len(a) != 0 {
		t.Fatalf("PARKED alerts %+v below the limit, want none", a)
	}
	at := &fakeAck{}
	w.Handle(context.Background(), amqp.Delivery{Acknowledger: at, DeliveryTag: 2, MessageId: mid, Redelivered: true,
		Headers: amqp.Table{"x-delivery-count": int64(e.cfg.DeliveryLimit)}, Body: body(payload(1, 1, notification.GradeRenewal))})
	if acks, nacks, _ := at.counts(); acks != 1 || nacks != 0 {
		t.Fatalf("at the limit: acks %d nacks %d, want the delivery acked once parked", acks, nacks)
	}
	d := e.parked()
	if got := fmt.Sprint(d.Headers[broker.HeaderFailureReason]); d.MessageId != mid || !strings.HasPrefix(got, "DELIVERY_LIMIT") {
		t.Fatalf("parked %s with reason %q, want %s with DELIVERY_LIMIT", d.MessageId, got, mid)
	}
	// RabbitMQ 3.10 sets the header on every quorum delivery (0 on the
	// first); a copied one must not survive as the copy's count.
	if n, ok := d.Headers["x-delivery-count"]; ok && fmt.Sprint(n) != "0" {
		t.Fatalf("the parked copy's first delivery carries x-delivery-count %v: a replay would be parked again at once", n)
	}
	a := e.rec.OfKind(history.AlertParked)
	if len(a) != 1 || a[0].MessageID != mid || a[0].OutboxID != 1 || !strings.HasPrefix(a[0].Reason, "DELIVERY_LIMIT") {
		t.Fatalf("PARKED alerts %+v, want one for %s", a, mid)
	}
	if e.fv.Calls() != 0 {
		t.Fatal("vendor called for a message past its delivery limit")
	}
}

// design §5: cancelled before the claim → nothing was sent → requeue for
// another instance.
func TestStopBeforeClaim_Requeues(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.member(1, true, true)
	w := e.newWorker()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	ack := &fakeAck{}
	mid := notification.MessageID(1)
	w.Handle(ctx, amqp.Delivery{Acknowledger: ack, DeliveryTag: 1, MessageId: mid, Body: body(payload(1, 1, notification.GradeRenewal))})
	if a, n, rq := ack.counts(); a != 0 || n != 1 || rq != 1 {
		t.Fatalf("acks %d nacks %d requeued %d; want one requeue", a, n, rq)
	}
	if _, ok := e.history(mid); ok {
		t.Fatal("history row written")
	}
	if e.fv.Calls() != 0 {
		t.Fatal("vendor called")
	}
}

// design §5 / §6 case 9: a vendor timeout is an unknown outcome: ERROR plus a
// VENDOR_UNKNOWN alert, never retried — not even when the same message
// arrives again.
func TestVendorTimeout_ErrorAlertNeverResent(t *testing.T) {
	t.Parallel()
	// Short enough that the hung send times out soon, long enough that no
	// answering call (the token, the sentinel's send) comes near it on a
	// loaded machine, and below the vendor's 5 s hang.
	e := newEnv(t, func(c *config.Config) { c.VendorTimeout = 2 * time.Second })
	e.member(1, true, true)
	mid := notification.MessageID(1)
	if err := e.fv.AddRule(fakevendor.Rule{RefKey: mid, Mode: fakevendor.AcceptHang}); err != nil {
		t.Fatal(err)
	}
	e.start()
	e.publishPayload(payload(1, 1, notification.GradeRenewal))
	r := e.waitStatus(mid, history.InboxError)
	if r.VendorCode == nil || *r.VendorCode != "TIMEOUT" {
		t.Fatalf("history %+v, want vendor code TIMEOUT", r)
	}
	// The alert follows the ERROR row: wait for it.
	testenv.Eventually(t, 10*time.Second, "the VENDOR_UNKNOWN alert", func() bool { return len(e.rec.OfKind(history.AlertVendorUnknown)) > 0 })
	a := e.rec.OfKind(history.AlertVendorUnknown)
	if len(a) != 1 || a[0].MessageID != mid || a[0].OutboxID != 1 || a[0].DedupKey == "" {
		t.Fatalf("VENDOR_UNKNOWN alerts %+v", a)
	}
	// The same message again (a republish after a lease expiry, say).
	e.publishPayload(payload(1, 1, notification.GradeRenewal))
	e.sentinel()
	if n := e.calls(mid); n != 1 {
		t.Fatalf("%d vendor calls, want 1: an unknown outcome must never be retried", n)
	}
	if n := e.fv.Count(mid); n != 1 {
		t.Fatalf("ledger count %d, want 1", n)
	}
	if r, _ := e.history(mid); r.Status != history.InboxError {
		t.Fatalf("history now %s", r.Status)
	}
}

// design §5: 5xx is unknown: ERROR + alert, not retried (whether or not the
// vendor acted on it).
func TestVendor5xx_ErrorNotRetried(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.member(1, true, true)
	e.member(2, true, true)
	plain, acted := notification.MessageID(1), notification.MessageID(2)
	for mid, mode := range map[string]fakevendor.Mode{plain: fakevendor.Fail5xx, acted: fakevendor.Accept5xx} {
		if err := e.fv.AddRule(fakevendor.Rule{RefKey: mid, Mode: mode}); err != nil {
			t.Fatal(err)
		}
	}
	e.start()
	e.publishPayload(payload(1, 1, notification.GradeRenewal))
	e.publishPayload(payload(2, 2, notification.GradeRenewal))
	for _, mid := range []string{plain, acted} {
		r := e.waitStatus(mid, history.InboxError)
		if r.VendorCode == nil || !strings.HasPrefix(*r.VendorCode, "HTTP_5") {
			t.Fatalf("%s: vendor code %v", mid, r.VendorCode)
		}
	}
	e.publishPayload(payload(1, 1, notification.GradeRenewal))
	e.publishPayload(payload(2, 2, notification.GradeRenewal))
	e.sentinel()
	for mid, ledger := range map[string]int{plain: 0, acted: 1} {
		if n := e.calls(mid); n != 1 {
			t.Fatalf("%s: %d vendor calls, want 1", mid, n)
		}
		if n := e.fv.Count(mid); n != ledger {
			t.Fatalf("%s: ledger %d, want %d", mid, n, ledger)
		}
	}
	if n := len(e.rec.OfKind(history.AlertVendorUnknown)); n != 2 {
		t.Fatalf("%d VENDOR_UNKNOWN alerts, want 2", n)
	}
}

// design §5: 429 is definitely not sent: the claim is released and the
// message retried in-listener, reaching the handset once.
func TestVendor429_RetriedInListenerSentOnce(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.member(1, true, true)
	mid := notification.MessageID(1)
	if err := e.fv.AddRule(fakevendor.Rule{RefKey: mid, Mode: fakevendor.Status429, Times: 1}); err != nil {
		t.Fatal(err)
	}
	e.start()
	e.publishPayload(payload(1, 1, notification.GradeRenewal))
	e.waitStatus(mid, history.InboxSent)
	if n := e.calls(mid); n != 2 {
		t.Fatalf("%d vendor calls, want 2 (429, then success)", n)
	}
	if n := e.fv.Count(mid); n != 1 {
		t.Fatalf("ledger %d, want 1", n)
	}
	_, retry, parking, err := broker.Depths(e.ch, e.cfg.Prefix)
	if err != nil || retry != 0 || parking != 0 {
		t.Fatalf("retry %d parking %d (%v): an in-listener retry must not use the queues", retry, parking, err)
	}
}

// design §5 / §6 case 12: a vendor that keeps answering 401 is retried
// in-listener twice, then through the retry queue up to RetryMax times, then
// the message is parked with the reason in x-failure-reason. Nothing was
// sent and no history row remains.
func TestVendor401Forever_RetryQueueThenParking(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.member(1, true, true)
	mid := notification.MessageID(1)
	if err := e.fv.AddRule(fakevendor.Rule{RefKey: mid, Mode: fakevendor.Status401}); err != nil {
		t.Fatal(err)
	}
	e.start()
	e.publishPayload(payload(1, 1, notification.GradeRenewal))
	d := e.expectParked(mid, "VENDOR_REJECTED:HTTP_401")
	want := (e.cfg.InListenerRetries + 1) * (e.cfg.RetryMax + 1)
	if n := e.calls(mid); n != want {
		t.Fatalf("%d vendor calls, want %d ((in-listener retries + 1) × (retry-queue trips + 1))", n, want)
	}
	if rc, _ := d.Headers[broker.HeaderRetryCount].(int32); int(rc) != e.cfg.RetryMax {
		t.Fatalf("x-retry-count %v, want %d", d.Headers[broker.HeaderRetryCount], e.cfg.RetryMax)
	}
	p, err := notification.Decode(d.Body)
	if err != nil || p.OutboxID != 1 {
		t.Fatalf("parked body %s: %v", d.Body, err)
	}
	if e.historyCount() != 1 {
		t.Fatal("want the park's FAILED row alone")
	}
	e.fv.ResetRules()
	// A second copy (a relay's republish) finds the park on record and
	// is not sent: the PARKED alert stays true.
	e.publish(d.MessageId, d.Body, nil)
	e.sentinel()
	if n := e.fv.Count(mid); n != 0 {
		t.Fatalf("ledger %d after a second copy, want 0", n)
	}
	// Replaying from parking is safe: same message_id. The parked copy
	// reclaims the FAILED row; with the vendor healthy again it is sent
	// exactly once.
	e.publish(d.MessageId, d.Body, d.Headers)
	e.waitStatus(mid, history.InboxSent)
	if n := e.fv.Count(mid); n != 1 {
		t.Fatalf("ledger %d after replay, want 1", n)
	}
}

// design §5 step 2: permanent failures park the message (reason in
// x-failure-reason) before any claim: no history row, no vendor call.
func TestPrecheck_PermanentFailuresParkedBeforeClaim(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.member(1, true, true)
	e.start()
	longFallback := payload(2, 1, notification.GradeRenewal)
	longFallback.Fallback = strings.Repeat("가", 1000) + "!" // 2001 EUC-KR bytes
	unknownKind := payload(3, 1, notification.GradeRenewal)
	unknownKind.Kind = "BIRTHDAY"
	missingTpl := payload(4, 1, notification.GradeRenewal)
	missingTpl.Template = "GONE_V0"
	emoji := payload(5, 1, notification.GradeRenewal)
	emoji.Fallback = "축하 😀"
	longID := strings.Repeat("x", notification.MaxMessageIDLen+1)
	cases := []struct {
		name, mid, reason string
		body              []byte
	}{
		{"fallback over 2000 EUC-KR bytes", notification.MessageID(2), "FALLBACK_TOO_LONG", body(longFallback)},
		{"fallback not encodable in EUC-KR", notification.MessageID(5), "FALLBACK_UNBUILDABLE", body(emoji)},
		{"unknown kind", notification.MessageID(3), "UNKNOWN_KIND", body(unknownKind)},
		{"missing template", notification.MessageID(4), "TEMPLATE_MISSING", body(missingTpl)},
		{"message_id over 100 characters", longID, "MESSAGE_ID_TOO_LONG", body(payload(6, 1, notification.GradeRenewal))},
		{"malformed JSON", notification.MessageID(7), "MALFORMED_PAYLOAD", []byte(`{"kind":`)},
		{"unknown field", notification.MessageID(8), "MALFORMED_PAYLOAD",
			[]byte(strings.Replace(string(body(payload(8, 1, notification.GradeRenewal))), `{`, `{"extra":1,`, 1))},
		{"message_id not of its outbox row", notification.MessageID(99), "MESSAGE_ID_MISMATCH", body(payload(9, 1, notification.GradeRenewal))},
		{"missing message_id", "", "MISSING_MESSAGE_ID", body(payload(10, 1, notification.GradeRenewal))},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e.t = t
			e.publish(c.mid, c.body, nil)
			e.expectParked(c.mid, c.reason)
		})
	}
	e.t = t
	if e.fv.Calls() != 0 || e.historyCount() != 0 {
		t.Fatalf("%d vendor calls, %d history rows; want none", e.fv.Calls(), e.historyCount())
	}
}

// design §5: advertising messages are sent only 08:00–20:50 (worker clock);
// outside they are parked with OUTSIDE_AD_HOURS. Non-advertising messages
// are sent at any hour.
func TestAdHours_OutsideParked(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name       string
		hh, mm, ss int
		parked     bool
	}{
		{"20:50:00", 20, 50, 0, true},
		{"20:49:59", 20, 49, 59, false},
		{"07:59:59", 7, 59, 59, true},
		{"08:00:00", 8, 0, 0, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			e.clk = clock.NewVirtual(clock.At(time.Now(), c.hh, c.mm).Add(time.Duration(c.ss)*time.Second), 0)
			e.member(1, true, true)
			e.start()
			ad := e.publishPayload(payload(1, 1, notification.MissionReminder))
			info := e.publishPayload(payload(2, 1, notification.GradeRenewal))
			e.waitStatus(info, history.InboxSent)
			if c.parked {
				e.expectParked(ad, "OUTSIDE_AD_HOURS")
				return
			}
			e.waitStatus(ad, history.InboxSent)
		})
	}
}

// design §5 step 2 and the non-production layers: withdrawn consent, an
// unknown member or an unregistered number outside production skip the
// message — acked, no history row, not parked, not sent.
func TestPrecheck_SkipsWithoutHistory(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.member(1, false, true) // consent withdrawn
	e.member(2, true, false) // unregistered number
	e.start()
	mids := []string{
		e.publishPayload(payload(1, 1, notification.GradeRenewal)),
		e.publishPayload(payload(2, 2, notification.GradeRenewal)),
		e.publishPayload(payload(3, 3, notification.GradeRenewal)), // no such member
	}
	e.sentinel()
	for _, mid := range mids {
		if _, ok := e.history(mid); ok {
			t.Fatalf("%s: history row written", mid)
		}
		if n := e.calls(mid); n != 0 {
			t.Fatalf("%s: %d vendor calls", mid, n)
		}
	}
	m, retry, parking, err := broker.Depths(e.ch, e.cfg.Prefix)
	if err != nil || m != 0 || retry != 0 || parking != 0 {
		t.Fatalf("depths %d/%d/%d (%v): skipped messages must be acked, not parked", m, retry, parking, err)
	}
}

// In production the unregistered number is sent.
func TestProduction_UnregisteredNumberSent(t *testing.T) {
	t.Parallel()
	e := newEnv(t, func(c *config.Config) { c.Production = true })
	e.member(2, true, false)
	e.start()
	mid := e.publishPayload(payload(2, 2, notification.GradeRenewal))
	e.waitStatus(mid, history.InboxSent)
}

// design §5 step 5 and §6 case 11: the result is written before the ack, so
// a worker that dies between the two leaves a finished row that blocks the
// redelivered copy (acking first would leave SENDING behind, or nothing
// durable at all about the send).
func TestResultWrittenBeforeAck(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.member(1, true, true)
	e.member(2, true, true)
	if err := e.fv.AddRule(fakevendor.Rule{RefKey: notification.MessageID(2), Mode: fakevendor.Fail5xx}); err != nil {
		t.Fatal(err)
	}
	w := e.newWorker()
	for id, want := range map[int64]string{1: history.InboxSent, 2: history.InboxError} {
		mid := notification.MessageID(id)
		var atAck string
		ack := &fakeAck{onAck: func() {
			r, ok := e.history(mid)
			atAck = r.Status
			if !ok {
				atAck = "<no row>"
			}
		}}
		w.Handle(context.Background(), amqp.Delivery{Acknowledger: ack, DeliveryTag: 1, MessageId: mid, Body: body(payload(id, id, notification.GradeRenewal))})
		if a, _, _ := ack.counts(); a != 1 {
			t.Fatalf("%s: %d acks", mid, a)
		}
		if atAck != want {
			t.Fatalf("%s: history row was %s when the delivery was acked, want %s", mid, atAck, want)
		}
	}
}

// Every send carries expireat = its claim time + vendor-accept-window: a
// vendor whose clock is already past it refuses the request (definitely
// not sent, nothing reaches the phone); one just short of it accepts. The
// reconciler's "never received" is final only because of this bound.
func TestSendExpiresOneWindowAfterItsClaim(t *testing.T) {
	t.Parallel()
	for name, c := range map[string]struct {
		ahead time.Duration
		sent  bool
	}{"vendor past the window": {time.Minute + 5*time.Second, false}, "vendor within the window": {time.Minute - 5*time.Second, true}} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, func(c *config.Config) { c.VendorAcceptWindow, c.InListenerRetries, c.RetryMax = time.Minute, 0, 0 })
			e.vendorAhead = c.ahead
			e.member(1, true, true)
			e.start()
			mid := e.publishPayload(payload(1, 1, notification.GradeRenewal))
			if c.sent {
				e.waitStatus(mid, history.InboxSent)
				return
			}
			testenv.Eventually(t, waitFor, "the request refused as expired", func() bool {
				for _, call := range e.fv.CallLog() {
					if call.RefKey == mid && call.Expired {
						return true
					}
				}
				return false
			})
			if n := e.fv.Count(mid); n != 0 {
				t.Fatalf("an expired request reached the handset %d times", n)
			}
		})
	}
}
