// Package sendrecord is the design the outbox replaced, run as
// a peer: "send, then record". The batch job calls the vendor for every
// member due, then records a history row; the next run skips members with
// a history row. Nothing ties the call to the record: a crash between
// them leaves no row, and the next run sends again.
//
// Through the seam, our batch jobs still write notification_outbox (the
// intents the checker counts, here the list of members due) and Enqueue
// adds nothing; the "relay" pod is the batch's send loop: every
// RelayInterval it reads the due rows without a history row, calls the
// vendor (the same request our worker makes, refkey = message_id) and
// records the history row in notification_histories — the batch's history
// table, which the outbox design later made its inbox. Kill-points: relay.after-claim once it read
// the due list, relay.after-publish and relay.after-confirm once the vendor
// answered, relay.before-mark right before the history row — the last
// three are the crash between the call and the record.
package sendrecord

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/outboxchaos/outboxchaos/history"
	"github.com/outboxchaos/outboxchaos/peers/seam"
	"github.com/outboxchaos/outboxchaos/system/clock"
	"github.com/outboxchaos/outboxchaos/system/killpoint"
	"github.com/outboxchaos/outboxchaos/system/precheck"
	"github.com/outboxchaos/outboxchaos/system/sms"
)

// Adapter is the send-then-record batch.
type Adapter struct{}

// Name implements seam.Adapter.
func (Adapter) Name() string { return "sendrecord" }

// Settings implements seam.Adapter.
func (Adapter) Settings() []seam.Setting {
	return []seam.Setting{
		seam.S("design", "send, then record", "the batch as it was before the outbox: the job calls the vendor, then inserts the history row"),
		seam.S("skip", "a history row for the notification's dedup_key", "the next run skips members with a history row of the day"),
		seam.S("history", "notification_histories (SENT, or ERROR on an unknown outcome)", "the send-then-record design's history table; the record is an INSERT after the call"),
		seam.S("vendor-request", "as our worker's, no expireat", "the send-then-record design sends without an acceptance deadline"),
		seam.S("interval", "RelayInterval (100 ms compressed)", "the batch's schedule, compressed"),
	}
}

// Migrate implements seam.Adapter: the history table is ours
// (notification_histories), which seam's migrate creates.
func (Adapter) Migrate(context.Context, seam.Env) error { return nil }

// Enqueue implements seam.Adapter: the due list is notification_outbox
// itself, so there is nothing more to write.
func (Adapter) Enqueue(context.Context, seam.Env, pgx.Tx, []seam.Message) error { return nil }

// Relay implements seam.Adapter: the batch's send loop.
func (Adapter) Relay(ctx context.Context, env seam.Env) error {
	pool, err := seam.OpenPool(ctx, env.Cfg.PGURL, nil, 4)
	if err != nil {
		return err
	}
	defer pool.Close()
	clk, err := env.Cfg.NewClock()
	if err != nil {
		return err
	}
	vendor := sms.New(env.Cfg.VendorURL, env.Cfg.VendorAccount, env.Cfg.VendorPassword, env.Cfg.VendorTimeout)
	t := time.NewTicker(env.Cfg.RelayInterval)
	defer t.Stop()
	for {
		if err := run(ctx, env, pool, clk, vendor); err != nil && ctx.Err() == nil {
			env.Log.Warn("batch run failed", history.KeyEvent, history.BatchFailed, "err", err)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

// run is one batch run: every due notification without a history row.
func run(ctx context.Context, env seam.Env, pool *pgxpool.Pool, clk clock.Clock, vendor *sms.Client) error {
	rows, err := pool.Query(ctx, `SELECT o.id, o.dedup_key, o.payload FROM notification_outbox o
		WHERE NOT EXISTS (SELECT 1 FROM notification_histories h WHERE h.dedup_key = o.dedup_key)
		ORDER BY o.id LIMIT $1`, env.Cfg.BatchSize)
	if err != nil {
		return fmt.Errorf("read the members due: %w", err)
	}
	var due []seam.Message
	var keys []string
	for rows.Next() {
		var id int64
		var key string
		var raw []byte
		if err := rows.Scan(&id, &key, &raw); err != nil {
			rows.Close()
			return fmt.Errorf("scan a member due: %w", err)
		}
		m, err := seam.NewMessage(id, key, raw)
		if err != nil {
			rows.Close()
			return err
		}
		due, keys = append(due, m), append(keys, key)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return fmt.Errorf("read the members due: %w", err)
	}
	if len(due) == 0 {
		return nil
	}
	killpoint.Hit(killpoint.RelayAfterClaim)
	for i, m := range due {
		v, err := precheck.Check(ctx, pool, &env.Cfg, clk.Now(), m.MessageID, m.Body)
		if err != nil {
			return err
		}
		status, why := "FAILED", v.Reason
		if why == "" {
			r := v.Rendered
			res := vendor.Send(ctx, sms.Request{RefKey: m.MessageID, Phone: v.Payload.Phone, From: env.Cfg.SenderNumber,
				TemplateCode: r.TemplateCode, Text: r.Text, Fallback: r.Fallback})
			env.Log.Info("vendor call", history.KeyEvent, history.VendorCall, history.KeyMessageID, m.MessageID, history.KeyOutcome, res.Outcome.String(), "code", res.Code)
			if res.Outcome == sms.NotSent {
				continue // nothing sent: the next run tries again
			}
			killpoint.Hit(killpoint.RelayAfterPublish)
			killpoint.Hit(killpoint.RelayAfterConfirm)
			status, why = "SENT", res.Code
			if res.Outcome != sms.Sent {
				status = "ERROR"
			}
		}
		killpoint.Hit(killpoint.RelayBeforeMark)
		now := clk.Now()
		if _, err := pool.Exec(ctx, `INSERT INTO notification_histories (message_id, outbox_id, dedup_key, kind, phone, status, vendor_code, created_at, updated_at)
			SELECT $1::text, $2::bigint, $3::text, $4::text, $5::text, $6::text, $7::text, $8::timestamptz, $8::timestamptz
			WHERE NOT EXISTS (SELECT 1 FROM notification_histories WHERE message_id = $1::text)`,
			m.MessageID, m.OutboxID, keys[i], string(v.Payload.Kind), v.Payload.Phone, status, why, now); err != nil {
			return fmt.Errorf("record %s: %w", m.MessageID, err)
		}
		env.Log.Info("recorded", history.KeyEvent, history.Recorded, history.KeyMessageID, m.MessageID, history.KeyStatus, status)
	}
	return nil
}
