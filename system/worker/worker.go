// Package worker owns the consumer side of the main queue (design §5). Per
// message, in order:
//
//  1. peek: a history row exists → ack (a fast path, not a guard);
//  2. pre-checks: payload, message_id ≤ 100 chars, template and EUC-KR
//     fallback ≤ 2,000 bytes, advertising hours, member and consent
//     re-lookup, non-production number; a block parks or skips without a
//     history row;
//  3. claim: INSERT 'SENDING' ON CONFLICT (message_id) DO NOTHING; not
//     inserted → another copy won → ack without sending;
//  4. send: only the claimer calls the vendor, refkey = message_id (the
//     non-production number check runs again right before the call);
//  5. result: UPDATE … WHERE status='SENDING', then ack.
//
// Steps 3–5 run to completion even when the worker is stopping (they run on
// a context detached from cancellation); a stop before step 3 requeues.
// Vendor outcomes: definitely not sent → delete the claim and retry
// (in-listener, then the retry queue, then parking); unknown → ERROR + alert,
// never retried.
package worker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/outboxchaos/outboxchaos/history"
	"github.com/outboxchaos/outboxchaos/system/alert"
	"github.com/outboxchaos/outboxchaos/system/broker"
	"github.com/outboxchaos/outboxchaos/system/canary"
	"github.com/outboxchaos/outboxchaos/system/clock"
	"github.com/outboxchaos/outboxchaos/system/config"
	"github.com/outboxchaos/outboxchaos/system/crashpoint"
	"github.com/outboxchaos/outboxchaos/system/inbox"
	"github.com/outboxchaos/outboxchaos/system/killpoint"
	"github.com/outboxchaos/outboxchaos/system/notification"
	"github.com/outboxchaos/outboxchaos/system/precheck"
	"github.com/outboxchaos/outboxchaos/system/publisher"
	"github.com/outboxchaos/outboxchaos/system/sms"
)

// Vendor sends one message.
type Vendor interface {
	Send(ctx context.Context, req sms.Request) sms.Result
}

// Worker consumes the main queue.
type Worker struct {
	cfg    config.Config
	pool   *pgxpool.Pool
	clock  clock.Clock
	vendor Vendor
	alerts alert.Sender
	log    *slog.Logger
	pub    *publisher.Publisher // retry and parking publishes
	policy policy               // chosen in New

	mu     sync.Mutex
	cancel context.CancelFunc
	done   chan struct{}
}

// New returns a worker; the armed canary, if any, chooses its policy.
func New(cfg config.Config, pool *pgxpool.Pool, clk clock.Clock, v Vendor, alerts alert.Sender, log *slog.Logger) *Worker {
	return &Worker{
		cfg: cfg, pool: pool, clock: clk, vendor: v, alerts: alerts,
		log:    log.With("component", "worker"),
		pub:    publisher.New(cfg.AMQPURL, broker.NamesFor(cfg.Prefix).Exchange, cfg.ConfirmTimeout).Connection(cfg.AMQPHeartbeat, cfg.AMQPDialTimeout),
		policy: policyFor(canary.Armed()),
	}
}

// Start connects, declares the topology and begins consuming. It returns
// once the first consumer is registered (or with the error that stopped it);
// afterwards it reconnects by itself until Stop.
func (w *Worker) Start(ctx context.Context) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.done != nil {
		return errors.New("worker already started")
	}
	conn, deliveries, err := w.connect()
	if err != nil {
		return err
	}
	ctx, w.cancel = context.WithCancel(ctx)
	w.done = make(chan struct{})
	go w.run(ctx, conn, deliveries, w.done)
	return nil
}

func (w *Worker) connect() (*amqp.Connection, <-chan amqp.Delivery, error) {
	// AMQPURL may name several nodes: Dial reaches one that answers.
	conn, node, err := broker.Dial(w.cfg.AMQPURL, amqp.Config{Dial: amqp.DefaultDial(w.cfg.AMQPDialTimeout), Heartbeat: w.cfg.AMQPHeartbeat})
	if err != nil {
		return nil, nil, fmt.Errorf("dial broker: %w", err)
	}
	ch, err := conn.Channel()
	if err != nil {
		_ = conn.Close()
		return nil, nil, fmt.Errorf("open channel: %w", err)
	}
	topo := broker.TopologyOf(w.cfg)
	if err := topo.Declare(ch); err != nil {
		_ = conn.Close()
		return nil, nil, err
	}
	if err := ch.Qos(1, 0, false); err != nil {
		_ = conn.Close()
		return nil, nil, fmt.Errorf("set prefetch 1: %w", err)
	}
	d, err := ch.Consume(broker.NamesFor(w.cfg.Prefix).Main, w.cfg.Instance, false, false, false, false, nil)
	if err != nil {
		_ = conn.Close()
		return nil, nil, fmt.Errorf("consume: %w", err)
	}
	w.log.Info("consuming", history.KeyEvent, history.ConsumeStart, "queue", broker.NamesFor(w.cfg.Prefix).Main, "node", broker.Redacted(node))
	return conn, d, nil
}

func (w *Worker) run(ctx context.Context, conn *amqp.Connection, deliveries <-chan amqp.Delivery, done chan struct{}) {
	defer close(done)
	defer func() { _ = w.pub.Close() }()
	for {
		w.consume(ctx, deliveries)
		_ = conn.Close()
		if !w.policy.reconnect && ctx.Err() == nil {
			w.log.Error("broker connection lost; not reconnecting", history.KeyEvent, history.GaveUp)
			<-ctx.Done()
			return
		}
		for {
			if ctx.Err() != nil {
				return
			}
			w.log.Warn("broker connection lost, reconnecting", history.KeyEvent, history.Reconnect)
			select {
			case <-ctx.Done():
				return
			case <-time.After(200 * time.Millisecond):
			}
			var err error
			conn, deliveries, err = w.connect()
			if err == nil {
				break
			}
			w.log.Error("reconnect failed", "err", err)
		}
	}
}

func (w *Worker) consume(ctx context.Context, deliveries <-chan amqp.Delivery) {
	for {
		select {
		case <-ctx.Done():
			return
		case d, ok := <-deliveries:
			if !ok {
				return
			}
			// Each ack, nack and reject is a crash point (system/crashpoint).
			d.Acknowledger = crashpoint.Acker(d.Acknowledger)
			w.Handle(ctx, d)
		}
	}
}

// Stop stops consuming and waits for the message in hand to finish. Safe to
// call twice or before Start.
func (w *Worker) Stop() {
	w.mu.Lock()
	cancel, done := w.cancel, w.done
	w.mu.Unlock()
	if cancel == nil {
		return
	}
	cancel()
	<-done
}

// ack acks d, logging the step it was settled at (a history.Step* value,
// which readers compare) and why (for people).
func (w *Worker) ack(d amqp.Delivery, mid, step, why string) {
	if err := d.Ack(false); err != nil {
		w.log.Warn("ack failed; the copy will be redelivered", history.KeyEvent, history.AckFailed, history.KeyMessageID, mid, history.KeyErr, err)
		return
	}
	w.log.Info("acked", history.KeyEvent, history.Ack, history.KeyMessageID, mid, history.KeyStep, step, history.KeyWhy, why)
}

func (w *Worker) requeue(d amqp.Delivery, mid, why string) {
	if err := d.Nack(false, true); err != nil {
		w.log.Warn("nack failed", history.KeyEvent, history.NackFailed, history.KeyMessageID, mid, history.KeyErr, err)
		return
	}
	w.log.Info("requeued", history.KeyEvent, history.Requeue, history.KeyMessageID, mid, history.KeyWhy, why, "deliveries", deliveryCount(d)+1)
}

// headerDeliveryCount is the quorum queue's count of a message's returns.
const headerDeliveryCount = "x-delivery-count"

// deliveryCount is how often a quorum queue delivered d before (its
// x-delivery-count header; 0 on the first delivery).
func deliveryCount(d amqp.Delivery) int64 {
	switch v := d.Headers[headerDeliveryCount].(type) {
	case int64:
		return v
	case int32:
		return int64(v)
	case int:
		return int64(v)
	}
	return 0
}

// Handle processes one delivery through the five steps.
func (w *Worker) Handle(ctx context.Context, d amqp.Delivery) {
	mid := d.MessageId
	w.log.Info("delivered", history.KeyEvent, history.Delivery, history.KeyMessageID, mid, history.KeyRedelivered, d.Redelivered, "deliveries", deliveryCount(d)+1)
	killpoint.Hit(killpoint.WorkerOnDelivery)
	if w.policy.ackOnDelivery {
		w.ack(d, mid, history.StepAutoAck, "auto-ack on delivery")
		d.Acknowledger = noAck{}
	}
	if ctx.Err() != nil {
		w.requeue(d, mid, "stopping before claim")
		return
	}
	// Step 1: peek. A database that does not answer is the worker's
	// failure, not the message's: the worker holds the delivery and asks
	// again (peekHeld), so the delivery count, and the limit below, count
	// only the copies handed back by a worker that died or lost its
	// channel.
	// The body is decoded once: the peek reads its member's consent, the
	// pre-checks judge it.
	payload, derr := notification.Decode(d.Body)
	status, consent, err := w.peekHeld(ctx, mid, payload.MemberID)
	if w.policy.ignorePeek {
		status = ""
	}
	// A FAILED row is a park on record: final for every copy but the
	// parked one an operator moved back, which reclaims it.
	reclaim := status == history.InboxFailed && w.policy.recordPark && parkedCopy(d)
	if err == nil && status != "" && !reclaim {
		w.ack(d, mid, history.StepPeek, "history row exists")
		return
	}
	if err != nil && !w.policy.requeueOnDBFailure {
		// Stopping while the database did not answer: nothing was sent,
		// the next consumer peeks again.
		w.requeue(d, mid, "stopping: peek not answered")
		return
	}
	if n := deliveryCount(d); n >= int64(w.cfg.DeliveryLimit) {
		// The delivery limit is ours to enforce: parked here, the message
		// carries its reason and has its alert. RabbitMQ's own limit sits
		// DeliverySlack returns higher, for a worker that dies while it
		// parks; left to RabbitMQ, a worker killed on the last delivery
		// let the broker dead-letter it with neither. It comes after the
		// peek: a copy of a message already handled (its result written,
		// the ack lost) is acked there, never parked with an alert that
		// tells of a loss.
		w.parkAtLimit(ctx, d, payload, fmt.Sprintf("DELIVERY_LIMIT: delivered %d times", n+1), reclaim)
		return
	}
	if err != nil {
		// The RequeueOnDBFailure canary: handed back at the first failure.
		w.requeue(d, mid, "peek failed")
		return
	}
	// Step 2: pre-checks, held likewise while the database fails.
	p, rendered, reason, skip, err := w.precheckHeld(ctx, mid, payload, derr, consent)
	if err != nil {
		w.requeue(d, mid, "pre-check failed")
		return
	}
	if reason != "" {
		if skip {
			w.log.Info("skipped", history.KeyEvent, history.Skip, history.KeyMessageID, mid, history.KeyOutboxID, p.OutboxID, history.KeyReason, reason)
			w.ack(d, mid, history.StepSkip, "skipped: "+reason)
			return
		}
		w.park(ctx, d, p, reason, nil)
		return
	}
	if ctx.Err() != nil {
		w.requeue(d, mid, "stopping before claim")
		return
	}
	killpoint.Hit(killpoint.WorkerBeforeClaim)
	// Steps 3–5 are not cancellable.
	if !w.policy.releaseOnCancel {
		ctx = context.WithoutCancel(ctx)
	}
	w.claimAndSend(ctx, d, p, rendered, reclaim)
}

// peekSQL is step 1's peek and step 2's consent re-read in one statement
// ($1 the message_id, $2 the member's id): one round trip instead of two.
// The worker still acts on the answers in the design's order: a history
// row acks the copy before any pre-check is looked at.
var peekSQL = `SELECT coalesce((` + inbox.PeekSQL + `), ''), coalesce((` + consentSQL2 + `), false)`

// consentSQL2 is precheck.ConsentSQL with its member as $2.
var consentSQL2 = strings.Replace(precheck.ConsentSQL, "$1", "$2", 1)

// peekHeld peeks the inbox for mid and reads the consent of member,
// asking again after each failure (every in-listener-delay) while the
// delivery is held, until the database answers or ctx ends; err is the
// last failure then. Under the RequeueOnDBFailure canary it gives
// up at the first failure (after the pause), and the delivery goes back to
// the queue. A body that does not decode names no member (its consent is
// never looked at: the pre-checks stop at the payload).
func (w *Worker) peekHeld(ctx context.Context, mid string, member int64) (status string, consent bool, err error) {
	for {
		err = w.pool.QueryRow(ctx, peekSQL, mid, member).Scan(&status, &consent)
		if err == nil {
			return status, consent, nil
		}
		err = fmt.Errorf("peek inbox for %s: %w", mid, err)
		w.log.Error("peek failed", history.KeyEvent, history.PeekFailed, history.KeyMessageID, mid, history.KeyErr, err)
		w.pause(ctx)
		if ctx.Err() != nil || w.policy.requeueOnDBFailure {
			return "", false, err
		}
	}
}

// precheckHeld runs the pre-checks as peekHeld peeks: an infrastructure
// error is asked again while the delivery is held. consent is the
// member's consent as the peek read it.
func (w *Worker) precheckHeld(ctx context.Context, mid string, payload notification.Payload, derr error, consent bool) (p notification.Payload, r notification.Rendered, reason string, skip bool, err error) {
	for {
		p, r, reason, skip, err = w.precheck(ctx, mid, payload, derr, consent)
		if err == nil {
			return p, r, reason, skip, nil
		}
		w.log.Error("pre-check failed", history.KeyEvent, history.PrecheckFailed, history.KeyMessageID, mid, history.KeyErr, err)
		w.pause(ctx)
		if ctx.Err() != nil || w.policy.requeueOnDBFailure {
			return p, r, reason, skip, err
		}
	}
}

// pause slows the questions to a database that does not answer.
func (w *Worker) pause(ctx context.Context) {
	select {
	case <-ctx.Done():
	case <-time.After(w.cfg.InListenerDelay):
	}
}

// precheck returns a block reason (skip: ack without a history row; else
// park) or an infrastructure error (requeue).
func (w *Worker) precheck(ctx context.Context, mid string, payload notification.Payload, derr error, consent bool) (p notification.Payload, r notification.Rendered, reason string, skip bool, err error) {
	now := w.clock.Now()
	if w.policy.utcAdHours {
		now = now.UTC()
	}
	v, err := precheck.RunDecoded(ctx, w.pool, &w.cfg, now, mid, payload, derr, precheck.Options{SkipConsent: w.policy.skipConsent, Consent: &consent})
	return v.Payload, v.Rendered, v.Reason, v.Skip, err
}

func (w *Worker) allowedNumber(ctx context.Context, phone string) (bool, error) {
	return precheck.AllowedNumber(ctx, w.pool, w.cfg.Production, phone)
}

func retryCount(d amqp.Delivery) int {
	switch v := d.Headers[broker.HeaderRetryCount].(type) {
	case int32:
		return int(v)
	case int64:
		return int(v)
	case int:
		return v
	}
	return 0
}

// claimAndSend runs steps 3–5 on ctx (detached from cancellation, unless
// the ReleaseOnCancel canary is armed).
func (w *Worker) claimAndSend(ctx context.Context, d amqp.Delivery, p notification.Payload, r notification.Rendered, reclaim bool) {
	mid := d.MessageId
	c := inbox.Claim{MessageID: mid, OutboxID: p.OutboxID, DedupKey: p.DedupKey, Kind: string(p.Kind), Phone: p.Phone}
	for attempt := 0; ; attempt++ {
		// Step 3: claim. The claim time bounds the send: the request's
		// expireat is claimedAt + VendorAcceptWindow, so the vendor can
		// never accept it after that, however long this process stalls
		// (what lets the reconciler trust a final "never received").
		claimedAt := w.clock.Now()
		won, err := true, error(nil)
		switch {
		case reclaim && attempt == 0:
			won, err = inbox.Reclaim(ctx, w.pool, mid, claimedAt)
		case w.policy.claim:
			won, err = inbox.TryClaim(ctx, w.pool, c, claimedAt)
		}
		if err == nil {
			err = killpoint.Fail(killpoint.FailClaimResponse)
		}
		if err != nil {
			// The INSERT may or may not have committed. Nothing was sent:
			// requeue. If it did commit, the copy is blocked by its own row
			// and cleanup turns it into ERROR + alert (a known loss window).
			w.log.Error("claim failed", history.KeyEvent, history.ClaimFailed, history.KeyMessageID, mid, history.KeyErr, err)
			w.requeue(d, mid, "claim failed")
			return
		}
		if !won {
			w.log.Info("claim lost to another copy", history.KeyEvent, history.ClaimLost, history.KeyMessageID, mid)
			w.ack(d, mid, history.StepClaim, "claimed by another copy")
			return
		}
		w.log.Info("claimed", history.KeyEvent, history.Claim, history.KeyMessageID, mid, history.KeyOutboxID, p.OutboxID, history.KeyDedupKey, p.DedupKey)
		killpoint.Hit(killpoint.WorkerAfterClaim)

		// Third non-production layer, right before the vendor call.
		ok, err := w.allowedNumber(ctx, p.Phone)
		if err != nil || !ok {
			w.release(ctx, c, p)
			if err != nil {
				w.requeue(d, mid, "number check failed")
			} else {
				w.log.Info("skipped", history.KeyEvent, history.Skip, history.KeyMessageID, mid, history.KeyReason, "NON_PRODUCTION_NUMBER")
				w.ack(d, mid, history.StepSkip, "skipped: NON_PRODUCTION_NUMBER")
			}
			return
		}

		// Step 4: send.
		res := w.vendor.Send(ctx, sms.Request{RefKey: mid, Phone: p.Phone, From: w.cfg.SenderNumber,
			TemplateCode: r.TemplateCode, Text: r.Text, Fallback: r.Fallback, ExpireAt: w.deadline(claimedAt, p.Advertising)})
		w.log.Info("vendor call", history.KeyEvent, history.VendorCall, history.KeyMessageID, mid, history.KeyOutcome, res.Outcome.String(),
			history.KeyCode, res.Code, history.KeyAttempt, attempt+1)
		acked := false
		if w.policy.ackBeforeResult && res.Outcome == sms.Sent {
			w.ack(d, mid, history.StepSent, "sent (acked before the result)")
			acked = true
		}
		if w.policy.releaseOnCancel && ctx.Err() != nil {
			w.release(context.WithoutCancel(ctx), c, p)
			w.requeue(d, mid, "stopping during the send")
			return
		}
		killpoint.Hit(killpoint.WorkerAfterSend)
		if w.policy.retryUnknown && res.Outcome == sms.Unknown {
			res.Outcome = sms.NotSent
		}

		// Step 5: result.
		switch res.Outcome {
		case sms.Sent:
			w.result(ctx, c, history.InboxSent, res.Code, "")
			killpoint.Hit(killpoint.WorkerAfterResult)
			if !acked {
				w.ack(d, mid, history.StepSent, "sent")
			}
			return
		case sms.Unknown:
			// ERROR is final: no redelivery, cleanup or relay looks at the
			// row again, so its alert goes out before the row is written.
			// If the write fails, the row stays SENDING and cleanup alerts
			// again (two alerts, never none).
			w.alerts.Send(ctx, alert.Alert{Kind: history.AlertVendorUnknown, OutboxID: p.OutboxID, MessageID: mid,
				DedupKey: p.DedupKey, Reason: res.Code, Instance: w.cfg.Instance, At: w.clock.Now()})
			w.result(ctx, c, history.InboxError, res.Code, errText(res.Err))
			killpoint.Hit(killpoint.WorkerAfterErrorResult)
			killpoint.Hit(killpoint.WorkerAfterResult)
			w.ack(d, mid, history.StepUnknown, "vendor outcome unknown: ERROR, never retried")
			return
		}
		// Definitely not sent. The last refusal parks the message with
		// its claim held, and records the park (parkClaimed).
		final := attempt >= w.cfg.InListenerRetries && retryCount(d) >= w.cfg.RetryMax
		if final && w.policy.recordPark {
			w.park(ctx, d, p, "VENDOR_REJECTED:"+res.Code, &c)
			return
		}
		// Otherwise: free the claim, then retry. A release that
		// failed may have committed all the same (its answer lost): the
		// message goes back to the queue, never acked. Its copy then finds
		// either no row (the release committed) and sends — nothing was
		// sent — or its own SENDING row and does not, and cleanup turns
		// that row into ERROR + alert. Acking instead lost the message
		// silently whenever the release had committed (the recorded run
		// that shows it: checker/testdata/runs/*-release-failure-acked).
		if !w.release(ctx, c, p) {
			if w.policy.ackFailedRelease {
				w.ack(d, mid, history.StepRelease, "claim could not be released")
				return
			}
			w.requeue(d, mid, "claim could not be released")
			return
		}
		if attempt < w.cfg.InListenerRetries {
			time.Sleep(w.cfg.InListenerDelay)
			continue
		}
		n := retryCount(d)
		if n < w.cfg.RetryMax {
			if w.policy.alertOnRetry {
				w.alerts.Send(ctx, alert.Alert{Kind: history.AlertParked, OutboxID: p.OutboxID, MessageID: d.MessageId,
					DedupKey: p.DedupKey, Reason: "VENDOR_REJECTED:" + res.Code, Instance: w.cfg.Instance, At: w.clock.Now()})
			}
			w.republish(ctx, d, broker.KeyRetry, amqp.Table{broker.HeaderRetryCount: int32(n + 1)}, history.StepRetry, nil, nil)
			return
		}
		w.park(ctx, d, p, "VENDOR_REJECTED:"+res.Code, nil)
		return
	}
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// result writes step 5. A failure is logged and alerted; the SENDING row
// then blocks every redelivery and cleanup turns it into ERROR.
func (w *Worker) result(ctx context.Context, c inbox.Claim, status, code, errText string) {
	err := killpoint.Fail(killpoint.FailResultUpdate)
	ok := false
	if err == nil {
		if !w.policy.claim {
			// No claim row exists: write the history row after the fact.
			c2 := c
			ok, err = inbox.TryClaim(ctx, w.pool, c2, w.clock.Now())
			if err == nil {
				ok, err = inbox.Finish(ctx, w.pool, c.MessageID, status, code, errText, w.clock.Now())
			}
		} else {
			ok, err = inbox.Finish(ctx, w.pool, c.MessageID, status, code, errText, w.clock.Now())
		}
	}
	if err != nil {
		w.log.Error("result write failed", history.KeyEvent, history.ResultFailed, history.KeyMessageID, c.MessageID, history.KeyStatus, status, history.KeyErr, err)
		w.alerts.Send(ctx, alert.Alert{Kind: history.AlertResultWriteFailed, OutboxID: c.OutboxID, MessageID: c.MessageID,
			DedupKey: c.DedupKey, Reason: fmt.Sprintf("%s not written: %v", status, err), Instance: w.cfg.Instance, At: w.clock.Now()})
		return
	}
	if !ok {
		w.log.Warn("result not written: row no longer SENDING", history.KeyEvent, history.ResultLate, history.KeyMessageID, c.MessageID, history.KeyStatus, status)
		return
	}
	w.log.Info("result written", history.KeyEvent, history.Result, history.KeyMessageID, c.MessageID, history.KeyStatus, status)
}

func (w *Worker) release(ctx context.Context, c inbox.Claim, p notification.Payload) bool {
	_, err := inbox.Release(ctx, w.pool, c.MessageID)
	if err == nil {
		err = killpoint.Fail(killpoint.FailReleaseResponse)
	}
	if err != nil {
		w.log.Error("release claim failed", history.KeyEvent, history.ReleaseFailed, history.KeyMessageID, c.MessageID, history.KeyErr, err)
		w.alerts.Send(ctx, alert.Alert{Kind: history.AlertClaimReleaseFailed, OutboxID: p.OutboxID, MessageID: c.MessageID,
			DedupKey: p.DedupKey, Reason: err.Error(), Instance: w.cfg.Instance, At: w.clock.Now()})
		return false
	}
	w.log.Info("claim released", history.KeyEvent, history.Release, history.KeyMessageID, c.MessageID)
	return true
}

// noAck swallows settlements of a delivery the AutoAck canary already acked.
type noAck struct{}

func (noAck) Ack(uint64, bool) error        { return nil }
func (noAck) Nack(uint64, bool, bool) error { return nil }
func (noAck) Reject(uint64, bool) error     { return nil }
