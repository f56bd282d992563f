package jetstream

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	js "github.com/nats-io/nats.go/jetstream"

	"github.com/outboxchaos/outboxchaos/history"
	"github.com/outboxchaos/outboxchaos/peers/seam"
	"github.com/outboxchaos/outboxchaos/system/clock"
	"github.com/outboxchaos/outboxchaos/system/killpoint"
	"github.com/outboxchaos/outboxchaos/system/precheck"
	"github.com/outboxchaos/outboxchaos/system/sms"
)

// AlreadyProcessed is the consumer's event (history.AlreadyProcessed) for a copy its processed table
// already holds: consumer idempotency stopped a duplicate.
const AlreadyProcessed = history.AlreadyProcessed

// consumer is one running idempotent consumer.
type consumer struct {
	env    seam.Env
	pool   *pgxpool.Pool
	clk    clock.Clock
	vendor *sms.Client
}

// Consume implements seam.Consumer: the design's idempotent consumer, until
// ctx is done. It pulls one message at a time from the durable consumer
// and handles each to its ack before the next.
func (Adapter) Consume(ctx context.Context, env seam.Env) error {
	pool, err := seam.OpenPool(ctx, env.Cfg.PGURL, nil, 2)
	if err != nil {
		return err
	}
	defer pool.Close()
	clk, err := env.Cfg.NewClock()
	if err != nil {
		return err
	}
	nc, s, err := connect(env, "consumer")
	if err != nil {
		return err
	}
	defer nc.Close()
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	cons, err := s.Consumer(cctx, Stream, Durable)
	cancel()
	if err != nil {
		return fmt.Errorf("find consumer %s: %w", Durable, err)
	}
	c := consumer{env: env, pool: pool, clk: clk,
		vendor: sms.New(env.Cfg.VendorURL, env.Cfg.VendorAccount, env.Cfg.VendorPassword, env.Cfg.VendorTimeout)}
	cc, err := cons.Consume(func(m js.Msg) { c.handle(ctx, m) }, js.PullMaxMessages(1),
		js.ConsumeErrHandler(func(_ js.ConsumeContext, err error) {
			env.Log.Warn("pull failed", history.KeyEvent, history.PullFailed, "err", err.Error())
		}))
	if err != nil {
		return fmt.Errorf("consume %s: %w", Durable, err)
	}
	env.Log.Info("consuming", history.KeyEvent, history.ConsumeStart, "consumer", Durable)
	<-ctx.Done()
	cc.Drain()
	<-cc.Closed()
	return nil
}

// handle is one delivery: the processed-table insert in a transaction held
// across the vendor call, the record committed after it, the ack after the
// commit.
func (c consumer) handle(ctx context.Context, m js.Msg) {
	log := c.env.Log
	mid := m.Headers().Get(js.MsgIDHeader)
	var deliveries uint64
	if md, err := m.Metadata(); err == nil {
		deliveries = md.NumDelivered
	}
	log.Info("delivered", history.KeyEvent, history.Delivery, history.KeyMessageID, mid,
		history.KeyRedelivered, deliveries > 1, "deliveries", deliveries)
	v, err := precheck.Check(ctx, c.pool, &c.env.Cfg, c.clk.Now(), mid, m.Data())
	if err != nil {
		log.Error("pre-check failed", history.KeyEvent, history.PrecheckFailed, history.KeyMessageID, mid, "err", err.Error())
		c.nak(m, mid, "pre-check failed")
		return
	}
	if v.Reason != "" && v.Skip {
		log.Info("skipped", history.KeyEvent, history.Skip, history.KeyMessageID, mid, history.KeyReason, v.Reason)
		c.ack(m, mid, "skipped: "+v.Reason)
		return
	}
	ctx = context.WithoutCancel(ctx) // the send and its record are not cancellable
	p := v.Payload
	tx, err := c.pool.Begin(ctx)
	if err != nil {
		log.Error("begin failed", history.KeyEvent, history.ClaimFailed, history.KeyMessageID, mid, "err", err.Error())
		c.nak(m, mid, "begin failed")
		return
	}
	defer func() { _ = tx.Rollback(context.Background()) }()
	now := c.clk.Now()
	tag, err := tx.Exec(ctx, `INSERT INTO notification_histories (message_id, outbox_id, dedup_key, kind, phone, status, created_at, updated_at)
		VALUES ($1, $2, $3, $4, $5, 'SENDING', $6, $6) ON CONFLICT (message_id) WHERE message_id IS NOT NULL DO NOTHING`,
		mid, p.OutboxID, p.DedupKey, string(p.Kind), p.Phone, now)
	if err != nil {
		log.Error("processed-table insert failed", history.KeyEvent, history.ClaimFailed, history.KeyMessageID, mid, "err", err.Error())
		c.nak(m, mid, "processed-table insert failed")
		return
	}
	if tag.RowsAffected() == 0 {
		log.Info("already processed", history.KeyEvent, AlreadyProcessed, history.KeyMessageID, mid, "deliveries", deliveries)
		_ = tx.Rollback(ctx)
		c.ack(m, mid, "already processed")
		return
	}
	status, code := "FAILED", v.Reason
	if v.Reason == "" {
		r := v.Rendered
		res := c.vendor.Send(ctx, sms.Request{RefKey: mid, Phone: p.Phone, From: c.env.Cfg.SenderNumber,
			TemplateCode: r.TemplateCode, Text: r.Text, Fallback: r.Fallback})
		log.Info("vendor call", history.KeyEvent, history.VendorCall, history.KeyMessageID, mid, history.KeyOutcome, res.Outcome.String(), "code", res.Code)
		if res.Outcome == sms.NotSent {
			_ = tx.Rollback(ctx)
			c.nak(m, mid, "not sent: "+res.Code)
			return
		}
		killpoint.Hit(killpoint.WorkerAfterSend)
		status, code = "SENT", res.Code
		if res.Outcome != sms.Sent {
			status = "ERROR"
		}
	}
	if err := c.record(ctx, tx, mid, status, code); err != nil {
		// Not acked: the copy comes back after the ack wait and, with no
		// record committed, is sent again — the gap the design
		// leaves between the side effect and its record.
		log.Error("record failed", history.KeyEvent, history.ResultFailed, history.KeyMessageID, mid, "err", err.Error())
		return
	}
	log.Info("result written", history.KeyEvent, history.Result, history.KeyMessageID, mid, history.KeyStatus, status)
	killpoint.Hit(killpoint.WorkerAfterResult)
	c.ack(m, mid, "processed")
}

// record writes the outcome into the held row and commits.
func (c consumer) record(ctx context.Context, tx pgx.Tx, mid, status, code string) error {
	if _, err := tx.Exec(ctx, `UPDATE notification_histories SET status = $2, vendor_code = $3, updated_at = $4 WHERE message_id = $1`,
		mid, status, code, c.clk.Now()); err != nil {
		return fmt.Errorf("record %s: %w", mid, err)
	}
	if err := tx.Commit(ctx); err != nil {
		return fmt.Errorf("commit %s: %w", mid, err)
	}
	return nil
}

func (c consumer) ack(m js.Msg, mid, why string) {
	if err := m.Ack(); err != nil {
		c.env.Log.Warn("ack failed", history.KeyEvent, history.AckFailed, history.KeyMessageID, mid, "err", err.Error())
		return
	}
	c.env.Log.Info("acked", history.KeyEvent, history.Ack, history.KeyMessageID, mid, history.KeyWhy, why)
}

func (c consumer) nak(m js.Msg, mid, why string) {
	err := m.NakWithDelay(c.env.Cfg.InListenerDelay)
	if err != nil && !errors.Is(err, js.ErrMsgAlreadyAckd) {
		c.env.Log.Warn("nak failed", history.KeyEvent, history.NackFailed, history.KeyMessageID, mid, "err", err.Error())
		return
	}
	c.env.Log.Info("nacked", history.KeyEvent, history.Requeue, history.KeyMessageID, mid, history.KeyWhy, why)
}
