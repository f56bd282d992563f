package worker

import (
	"context"
	"fmt"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/outboxchaos/outboxchaos/history"
	"github.com/outboxchaos/outboxchaos/system/alert"
	"github.com/outboxchaos/outboxchaos/system/broker"
	"github.com/outboxchaos/outboxchaos/system/inbox"
	"github.com/outboxchaos/outboxchaos/system/killpoint"
	"github.com/outboxchaos/outboxchaos/system/notification"
	"github.com/outboxchaos/outboxchaos/system/publisher"
)

// parkedCopy reports whether d is a parked copy (it carries the reason it
// was parked for): one an operator moved back from the parking queue.
func parkedCopy(d amqp.Delivery) bool {
	_, ok := d.Headers[broker.HeaderFailureReason]
	return ok
}

// parkAtLimit parks a delivery returned delivery-limit times. Its peek
// found no row (or a FAILED one this copy reclaims): nothing sent it. It
// first claims the message, as a send would, so that the park is
// recorded (FAILED) and no later copy is sent after the PARKED alert; a
// copy that loses the claim leaves the message to the one that won.
func (w *Worker) parkAtLimit(ctx context.Context, d amqp.Delivery, p notification.Payload, reason string, reclaim bool) {
	if !w.policy.recordPark || reclaim {
		w.park(ctx, d, p, reason, nil)
		return
	}
	c := inbox.Claim{MessageID: d.MessageId, OutboxID: p.OutboxID, DedupKey: p.DedupKey, Kind: string(p.Kind), Phone: p.Phone}
	won, err := inbox.TryClaim(ctx, w.pool, c, w.clock.Now())
	if err != nil {
		// Nothing was sent: the next delivery decides again. A claim
		// that committed all the same blocks it, and cleanup turns the
		// row into ERROR + alert.
		w.log.Error("claim failed", history.KeyEvent, history.ClaimFailed, history.KeyMessageID, d.MessageId, history.KeyErr, err)
		w.requeue(d, d.MessageId, "claim to park failed")
		return
	}
	if !won {
		w.log.Info("claim lost to another copy", history.KeyEvent, history.ClaimLost, history.KeyMessageID, d.MessageId)
		w.ack(d, d.MessageId, history.StepClaim, "claimed by another copy")
		return
	}
	w.park(ctx, d, p, reason, &c)
}

// park moves d to the consumer-less parking queue with its reason.
// Nothing looks at a parked message again but an operator.
//
// The PARKED alert goes out once the parking queue holds the copy, and
// before the delivery is acked: a park that fails hands the delivery
// back with no alert (a later copy may yet be sent: an alert then would
// tell of a loss that never happened), and a worker that dies between
// the copy and the alert leaves the delivery unacked, so the next one
// decides again and alerts.
//
// A copy that holds the message's claim (c: parked after the vendor's
// refusals or at the delivery limit) records the park once the alert is
// out: the row becomes FAILED, which every later copy finds at its peek,
// so no copy is sent after the alert said the message was lost. A worker
// that dies before that leaves the row SENDING: cleanup turns it into
// ERROR with an alert. A park the broker refuses frees the claim before
// the delivery goes back. A pre-check block (c nil) parks without a row.
func (w *Worker) park(ctx context.Context, d amqp.Delivery, p notification.Payload, reason string, c *inbox.Claim) {
	extra := amqp.Table{broker.HeaderFailureReason: reason}
	if !w.policy.parkReason {
		extra = nil
	}
	alerted := func() {
		w.alerts.Send(ctx, alert.Alert{Kind: history.AlertParked, OutboxID: p.OutboxID, MessageID: d.MessageId,
			DedupKey: p.DedupKey, Reason: reason, Instance: w.cfg.Instance, At: w.clock.Now()})
	}
	if w.policy.alertBeforePark {
		alerted()
		alerted = func() {}
	}
	confirmed, refused := alerted, func() {}
	if c != nil {
		confirmed = func() {
			alerted()
			w.result(ctx, *c, history.InboxFailed, "", reason)
		}
		refused = func() { w.release(ctx, *c, p) }
	}
	if w.republish(ctx, d, broker.KeyParking, extra, history.StepPark, confirmed, refused) {
		killpoint.Hit(killpoint.WorkerAfterPark)
		w.log.Warn("parked", history.KeyEvent, history.Park, history.KeyMessageID, d.MessageId, history.KeyOutboxID, p.OutboxID, history.KeyReason, reason)
	}
}

// republish copies d (same message_id, headers merged) to routing key and
// acks it once the broker confirmed, at step what (history.StepRetry or
// history.StepPark), after calling confirmed (if not nil); otherwise it
// calls refused (if not nil) and requeues d.
func (w *Worker) republish(ctx context.Context, d amqp.Delivery, key string, extra amqp.Table, what string, confirmed, refused func()) bool {
	h := amqp.Table{}
	for k, v := range d.Headers {
		h[k] = v
	}
	// The copy is a new message to its queue. RabbitMQ 3.10 overwrites
	// x-delivery-count on every delivery, but a broker that sets it only
	// on redeliveries would let a copied count read as returns the copy
	// never had, and park it early.
	delete(h, headerDeliveryCount)
	for k, v := range extra {
		h[k] = v
	}
	// Said before the publish: a copy this process may have put on the
	// queue is on record even if it dies before it learns the outcome
	// (the checker's republish bound counts it).
	w.log.Info("republishing", history.KeyEvent, history.Republish, history.KeyMessageID, d.MessageId, history.KeyTo, key)
	res, err := w.pub.PublishBatch(ctx, []publisher.Message{{MessageID: d.MessageId, RoutingKey: key, Body: d.Body, Headers: h}})
	if err == nil && res[0].Outcome != publisher.Confirmed {
		err = fmt.Errorf("%s: %v", res[0].Outcome, res[0].Err)
	}
	if err != nil {
		// history.RetryFailed or history.ParkFailed.
		w.log.Error("republish failed", history.KeyEvent, what+"-failed", history.KeyMessageID, d.MessageId, history.KeyErr, err)
		if refused != nil {
			refused()
		}
		w.requeue(d, d.MessageId, what+" failed")
		return false
	}
	if confirmed != nil {
		confirmed()
	}
	w.ack(d, d.MessageId, what, what)
	return true
}
