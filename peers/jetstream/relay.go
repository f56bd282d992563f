package jetstream

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nats-io/nats.go"
	js "github.com/nats-io/nats.go/jetstream"

	"github.com/outboxchaos/outboxchaos/history"
	"github.com/outboxchaos/outboxchaos/peers/seam"
	"github.com/outboxchaos/outboxchaos/system/killpoint"
)

// Relay implements seam.Adapter: the design's relay, every relay-interval
// one transaction that locks a batch, publishes it and marks it.
func (Adapter) Relay(ctx context.Context, env seam.Env) error {
	pool, err := seam.OpenPool(ctx, env.Cfg.PGURL, nil, 2)
	if err != nil {
		return err
	}
	defer pool.Close()
	nc, s, err := connect(env, "relay")
	if err != nil {
		return err
	}
	defer nc.Close()
	t := time.NewTicker(env.Cfg.RelayInterval)
	defer t.Stop()
	for {
		if err := relayOnce(ctx, env, pool, s); err != nil && ctx.Err() == nil {
			env.Log.Warn("relay run failed", history.KeyEvent, history.RunFailed, "err", err)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

// row is one locked js_outbox row.
type row struct {
	id        int64
	subject   string
	messageID string
	payload   []byte
}

// relayOnce is one run: lock, publish, mark, commit — the locks held from
// the SELECT to the COMMIT.
func relayOnce(ctx context.Context, env seam.Env, pool *pgxpool.Pool, s js.JetStream) error {
	tx, err := pool.Begin(ctx)
	if err != nil {
		return fmt.Errorf("begin: %w", err)
	}
	defer func() { _ = tx.Rollback(context.Background()) }()
	rows, err := tx.Query(ctx, `SELECT id, subject, message_id, payload FROM js_outbox
		WHERE published_at IS NULL ORDER BY id LIMIT $1 FOR UPDATE SKIP LOCKED`, env.Cfg.BatchSize)
	if err != nil {
		return fmt.Errorf("lock unpublished rows: %w", err)
	}
	var batch []row
	for rows.Next() {
		var r row
		if err := rows.Scan(&r.id, &r.subject, &r.messageID, &r.payload); err != nil {
			rows.Close()
			return fmt.Errorf("scan js_outbox: %w", err)
		}
		batch = append(batch, r)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return fmt.Errorf("lock unpublished rows: %w", err)
	}
	if len(batch) == 0 {
		return nil
	}
	env.Log.Info("rows locked", history.KeyEvent, history.Locked, history.KeyCount, len(batch))
	killpoint.Hit(killpoint.RelayAfterClaim)
	var done []int64
	var perr error
	for _, r := range batch {
		pctx, cancel := context.WithTimeout(ctx, env.Cfg.ConfirmTimeout)
		ack, err := s.PublishMsg(pctx, &nats.Msg{Subject: r.subject, Data: r.payload, Header: nats.Header{}}, js.WithMsgID(r.messageID))
		cancel()
		if err != nil {
			env.Log.Warn("publish outcome", history.KeyEvent, history.Publish, history.KeyMessageID, r.messageID, history.KeyOutboxID, r.id,
				"outcome", outcomeOf(err), "err", err.Error())
			perr = fmt.Errorf("publish %s: %w", r.messageID, err)
			break
		}
		env.Log.Info("publish outcome", history.KeyEvent, history.Publish, history.KeyMessageID, r.messageID, history.KeyOutboxID, r.id,
			"outcome", "confirmed", "duplicate", ack.Duplicate, "stream_seq", ack.Sequence)
		killpoint.Hit(killpoint.RelayAfterPublish)
		killpoint.Hit(killpoint.RelayAfterConfirm)
		done = append(done, r.id)
	}
	if len(done) > 0 {
		killpoint.Hit(killpoint.RelayBeforeMark)
		if _, err := tx.Exec(ctx, `UPDATE js_outbox SET published_at = now() WHERE id = ANY($1)`, done); err != nil {
			return fmt.Errorf("mark %d rows published: %w", len(done), err)
		}
		if err := tx.Commit(ctx); err != nil {
			return fmt.Errorf("commit %d rows published: %w", len(done), err)
		}
		env.Log.Info("rows marked published", history.KeyEvent, history.Mark, history.KeyCount, len(done))
	}
	return perr
}
