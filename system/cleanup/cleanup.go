// Package cleanup owns the sweep of stuck inbox claims (design §5): SENDING
// rows older than the SENDING timeout become ERROR with an alert. Only one
// instance runs at a time across processes, through a lock row with an
// expiry in scheduler_locks (as ShedLock does), compared against the clock's
// time, never SQL now().
package cleanup

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/outboxchaos/outboxchaos/history"
	"github.com/outboxchaos/outboxchaos/system/alert"
	"github.com/outboxchaos/outboxchaos/system/canary"
	"github.com/outboxchaos/outboxchaos/system/clock"
	"github.com/outboxchaos/outboxchaos/system/config"
	"github.com/outboxchaos/outboxchaos/system/inbox"
	"github.com/outboxchaos/outboxchaos/system/killpoint"
	"github.com/outboxchaos/outboxchaos/system/periodic"
)

// LockName is the scheduler lock row of the cleanup.
const LockName = "notification-sending-cleanup"

// Cleanup sweeps SENDING rows.
type Cleanup struct {
	cfg    config.Config
	pool   *pgxpool.Pool
	clock  clock.Clock
	alerts alert.Sender
	log    *slog.Logger
	// alertLimit is how many of the rows one sweep turns into ERROR get
	// their SENDING_TIMEOUT alert: every one (-1); the NoCleanupAlert
	// canary makes it none (0), the AlertFirstStranded canary the first
	// only (1).
	alertLimit int

	loop periodic.Loop
}

// New returns a cleanup scheduler; the NoCleanupAlert canary, if armed,
// makes it sweep without alerting, the AlertFirstStranded canary alert
// only the first row of each sweep.
func New(cfg config.Config, pool *pgxpool.Pool, clk clock.Clock, alerts alert.Sender, log *slog.Logger) *Cleanup {
	limit := -1
	switch {
	case canary.On(canary.NoCleanupAlert):
		limit = 0
	case canary.On(canary.AlertFirstStranded):
		limit = 1
	}
	return &Cleanup{cfg: cfg, pool: pool, clock: clk, alerts: alerts, log: log.With("component", "cleanup"),
		alertLimit: limit}
}

// TryLock takes the named lock until now+ttl for owner if it is free or
// expired. It reports whether owner holds it.
func TryLock(ctx context.Context, pool *pgxpool.Pool, name, owner string, now time.Time, ttl time.Duration) (bool, error) {
	tag, err := pool.Exec(ctx, `
		INSERT INTO scheduler_locks (name, locked_until, locked_at, locked_by) VALUES ($1, $2, $3, $4)
		ON CONFLICT (name) DO UPDATE SET locked_until = EXCLUDED.locked_until,
			locked_at = EXCLUDED.locked_at, locked_by = EXCLUDED.locked_by
		WHERE scheduler_locks.locked_until <= EXCLUDED.locked_at`,
		name, now.Add(ttl), now, owner)
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && pgErr.Code == "42P01" {
		return false, fmt.Errorf("take scheduler lock %s: the schema is not migrated (run outboxchaos migrate): %w", name, err)
	}
	if err != nil {
		return false, fmt.Errorf("take scheduler lock %s: %w", name, err)
	}
	return tag.RowsAffected() == 1, nil
}

// Unlock releases the lock if owner still holds it.
func Unlock(ctx context.Context, pool *pgxpool.Pool, name, owner string, now time.Time) error {
	if _, err := pool.Exec(ctx, `UPDATE scheduler_locks SET locked_until = $3 WHERE name = $1 AND locked_by = $2`,
		name, owner, now); err != nil {
		return fmt.Errorf("release scheduler lock %s: %w", name, err)
	}
	return nil
}

// RunOnce sweeps once if it gets the lock; it returns the rows turned into
// ERROR (0 without the lock).
func (c *Cleanup) RunOnce(ctx context.Context) (int, error) {
	now := c.clock.Now()
	ok, err := TryLock(ctx, c.pool, LockName, c.cfg.Instance, now, c.cfg.CleanupLockTTL)
	if err != nil {
		return 0, err
	}
	if !ok {
		c.log.Debug("cleanup lock held elsewhere", history.KeyEvent, history.CleanupSkip)
		return 0, nil
	}
	defer func() {
		if err := Unlock(context.WithoutCancel(ctx), c.pool, LockName, c.cfg.Instance, c.clock.Now()); err != nil {
			c.log.Error("release cleanup lock", "err", err)
		}
	}()
	killpoint.Hit(killpoint.CleanupBeforeUpdate)
	// The rows turn ERROR and are alerted inside one transaction that
	// commits after the alerts: if the commit's answer is lost, the alerts
	// are already out; if the commit failed, the next sweep alerts again.
	// Never an ERROR row without its alert.
	tx, err := c.pool.Begin(ctx)
	if err != nil {
		return 0, fmt.Errorf("begin SENDING sweep: %w", err)
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	rows, err := inbox.ExpireSending(ctx, tx, now.Add(-c.cfg.SendingTimeout), now)
	if err != nil {
		return 0, err
	}
	for i, r := range rows {
		c.log.Warn("SENDING timed out", history.KeyEvent, history.SendingTimeout, history.KeyMessageID, r.MessageID,
			history.KeyOutboxID, r.OutboxID, history.KeyDedupKey, r.DedupKey)
		if c.alertLimit >= 0 && i >= c.alertLimit {
			continue
		}
		c.alerts.Send(ctx, alert.Alert{Kind: history.AlertSendingTimeout, OutboxID: r.OutboxID, MessageID: r.MessageID,
			DedupKey: r.DedupKey, Reason: "SENDING_TIMEOUT", Instance: c.cfg.Instance, At: now})
	}
	if err := tx.Commit(ctx); err != nil {
		return 0, fmt.Errorf("commit SENDING sweep (its alerts are out; the sweep repeats): %w", err)
	}
	if len(rows) > 0 {
		// One line per committed sweep: a history can tell rows expired
		// together from rows expired by sweeps of their own.
		c.log.Info("SENDING sweep committed", history.KeyEvent, history.CleanupSweep, history.KeyCount, len(rows))
	}
	return len(rows), nil
}

// Start runs RunOnce every CleanupInterval until Stop.
func (c *Cleanup) Start(ctx context.Context) error {
	err := c.loop.Start(ctx, c.cfg.CleanupInterval, func(ctx context.Context) {
		if _, err := c.RunOnce(ctx); err != nil && ctx.Err() == nil {
			c.log.Error("cleanup run failed", history.KeyEvent, history.RunFailed, history.KeyErr, err)
		}
	})
	if err != nil {
		return fmt.Errorf("start cleanup: %w", err)
	}
	return nil
}

// Stop ends the loop. Safe to call twice or before Start.
func (c *Cleanup) Stop() { c.loop.Stop() }
