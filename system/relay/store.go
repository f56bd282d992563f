package relay

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5/pgtype"

	"github.com/outboxchaos/outboxchaos/history"
	"github.com/outboxchaos/outboxchaos/system/alert"
	"github.com/outboxchaos/outboxchaos/system/killpoint"
	"github.com/outboxchaos/outboxchaos/system/notification"
)

// The relay's reads and writes, with the statements chosen in New. Each
// takes the relay's turn on the database first (take, give).

// take waits for the relay's turn on the database (Relay.db) or for ctx to
// end; give hands the turn back.
func (r *Relay) take(ctx context.Context) error {
	select {
	case r.db <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (r *Relay) give() { <-r.db }

func (r *Relay) reclaim(ctx context.Context, now time.Time) (int, error) {
	if err := r.take(ctx); err != nil {
		return 0, fmt.Errorf("reclaim expired leases: %w", err)
	}
	defer r.give()
	rows, err := r.pool.Query(ctx, reclaimSQL, now)
	if err != nil {
		return 0, fmt.Errorf("reclaim expired leases: %w", err)
	}
	defer rows.Close()
	var ids []int64
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			return 0, fmt.Errorf("scan reclaimed row: %w", err)
		}
		ids = append(ids, id)
	}
	if err := rows.Err(); err != nil {
		return 0, fmt.Errorf("reclaim expired leases: %w", err)
	}
	if len(ids) > 0 {
		r.log.Info("reclaimed expired leases", history.KeyEvent, history.Reclaim, history.KeyCount, len(ids), history.KeyIDs, ids)
	}
	return len(ids), nil
}

// claim claims a batch with r.claimSQL and returns its rows with the
// re-read consent of their members and, outside production, their
// registered numbers (see withLookups).
func (r *Relay) claim(ctx context.Context, now time.Time) ([]claimed, map[int64]bool, map[string]bool, error) {
	args := []any{r.cfg.Instance, now.Add(r.cfg.Lease), now, r.cfg.BatchSize}
	if r.sql.claimWindow {
		args = append(args, now.Add(-r.cfg.RelayInterval))
	}
	if err := r.take(ctx); err != nil {
		return nil, nil, nil, fmt.Errorf("claim outbox rows: %w", err)
	}
	defer r.give()
	rows, err := r.pool.Query(ctx, r.claimSQL, args...)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("claim outbox rows: %w", err)
	}
	defer rows.Close()
	out := make([]claimed, 0, min(r.cfg.BatchSize, 1024))
	members, registered := map[int64]bool{}, map[string]bool{}
	for rows.Next() {
		var c claimed
		var member pgtype.Int8
		var consent pgtype.Bool
		var phone pgtype.Text
		if err := rows.Scan(&c.id, &c.dedupKey, &c.payload, &c.advertising, &c.scheduledDate, &c.attempts,
			&member, &consent, &phone, &c.taken); err != nil {
			return nil, nil, nil, fmt.Errorf("scan claimed row: %w", err)
		}
		// The ConsentFirstOnly canary keeps the first row's answer only.
		if member.Valid && consent.Valid && (!r.consentFirstOnly || len(out) == 0) {
			members[member.Int64] = consent.Bool
		}
		if phone.Valid {
			registered[phone.String] = true
		}
		out = append(out, c)
	}
	if err := rows.Err(); err != nil {
		return nil, nil, nil, fmt.Errorf("claim outbox rows: %w", err)
	}
	return out, members, registered, nil
}

// finish moves a claimed row to a final status, alerting when alertKind is
// set. A final row is never looked at again, so its alert goes out inside
// the transaction, before the commit (as cleanup does): a crash or a lost
// answer after the commit can no longer leave it without one. If the commit
// does not happen, the lease hands the row back and the next run alerts
// again (two alerts, never none).
func (r *Relay) finish(ctx context.Context, row claimed, status, reason, alertKind string, now time.Time) {
	if err := r.take(ctx); err != nil {
		r.log.Error("write final status", history.KeyEvent, history.WriteFailed, history.KeyOutboxID, row.id, history.KeyStatus, status, history.KeyErr, err)
		return
	}
	defer r.give()
	tx, err := r.pool.Begin(ctx)
	if err != nil {
		r.log.Error("write final status", history.KeyEvent, history.WriteFailed, history.KeyOutboxID, row.id, history.KeyStatus, status, history.KeyErr, err)
		return
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	tag, err := tx.Exec(ctx, r.sql.finish, row.id, r.cfg.Instance, status, reason, now)
	if err != nil {
		r.log.Error("write final status", history.KeyEvent, history.WriteFailed, history.KeyOutboxID, row.id, history.KeyStatus, status, history.KeyErr, err)
		return
	}
	if tag.RowsAffected() == 0 {
		r.log.Warn("lease lost, status not written", history.KeyEvent, history.LostLease, history.KeyOutboxID, row.id, history.KeyStatus, status)
		return
	}
	alerted := func() {
		if alertKind != "" {
			r.alerts.Send(ctx, alert.Alert{Kind: alertKind, OutboxID: row.id, MessageID: notification.MessageID(row.id),
				DedupKey: row.dedupKey, Reason: reason, Instance: r.cfg.Instance, At: now})
		}
	}
	if !r.alertAfterCommit {
		alerted()
	}
	err = tx.Commit(ctx)
	if err == nil && r.alertAfterCommit {
		alerted()
	}
	if err == nil {
		err = killpoint.Fail(killpoint.FailFinishResponse)
	}
	if err != nil {
		r.log.Error("write final status: outcome unknown, alert already sent", history.KeyEvent, history.WriteFailed,
			history.KeyOutboxID, row.id, history.KeyStatus, status, history.KeyErr, err)
		return
	}
	killpoint.Hit(killpoint.RelayAfterFinish)
	r.log.Info("row finished", history.KeyEvent, history.OutboxFinal, history.KeyOutboxID, row.id, history.KeyDedupKey, row.dedupKey,
		history.KeyStatus, status, history.KeyReason, reason)
}

func (r *Relay) defer_(ctx context.Context, row claimed, until, now time.Time) {
	if err := r.take(ctx); err != nil {
		r.log.Error("defer ad", history.KeyEvent, history.WriteFailed, history.KeyOutboxID, row.id, history.KeyErr, err)
		return
	}
	defer r.give()
	tag, err := r.pool.Exec(ctx, r.sql.deferAd, row.id, r.cfg.Instance, until, now)
	if err != nil {
		r.log.Error("defer ad", history.KeyEvent, history.WriteFailed, history.KeyOutboxID, row.id, history.KeyErr, err)
		return
	}
	if tag.RowsAffected() == 1 {
		r.log.Info("ad deferred past cut-off", history.KeyEvent, history.AdDeferred, history.KeyOutboxID, row.id, "until", until.Format(time.RFC3339))
	}
}

// fail releases a row whose publish failed, with backoff; the AlertAttempt-th
// failure raises an alert. The write and the alert follow finish's order:
// the alert goes out inside the transaction, before its commit. Alerting
// after an autocommit write lost the alert to a crash in between: the
// attempt was counted, so no later failure was ever the AlertAttempt-th
// again. If the commit does not happen, the lease hands the row back and
// its next failure is the AlertAttempt-th once more (two alerts, never
// none).
func (r *Relay) fail(ctx context.Context, row claimed, why string, now time.Time) {
	re := r.rules.failure(row, now)
	if err := r.take(ctx); err != nil {
		r.log.Error("release failed row", history.KeyEvent, history.WriteFailed, history.KeyOutboxID, row.id, history.KeyErr, err)
		return
	}
	defer r.give()
	tx, err := r.pool.Begin(ctx)
	if err != nil {
		r.log.Error("release failed row", history.KeyEvent, history.WriteFailed, history.KeyOutboxID, row.id, history.KeyErr, err)
		return
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	tag, err := tx.Exec(ctx, r.sql.fail, row.id, r.cfg.Instance, re.attempt, re.next, why, now)
	if err != nil {
		r.log.Error("release failed row", history.KeyEvent, history.WriteFailed, history.KeyOutboxID, row.id, history.KeyErr, err)
		return
	}
	if tag.RowsAffected() == 0 {
		r.log.Warn("lease lost, failure not written", history.KeyEvent, history.LostLease, history.KeyOutboxID, row.id)
		return
	}
	if re.alert && r.attemptsAlert {
		r.alerts.Send(ctx, alert.Alert{Kind: history.AlertRelayAttempts, OutboxID: row.id, MessageID: notification.MessageID(row.id),
			DedupKey: row.dedupKey, Reason: fmt.Sprintf("attempt %d: %s", re.attempt, why), Instance: r.cfg.Instance, At: now})
	}
	if err := tx.Commit(ctx); err != nil {
		r.log.Error("release failed row: outcome unknown", history.KeyEvent, history.WriteFailed, history.KeyOutboxID, row.id, history.KeyErr, err)
		return
	}
	killpoint.Hit(killpoint.RelayAfterFail)
	r.log.Warn("publish failed, backing off", history.KeyEvent, history.PublishFailed, history.KeyOutboxID, row.id, history.KeyAttempt, re.attempt,
		history.KeyFailedAt, now.Format(time.RFC3339Nano), history.KeyNextAttemptAt, re.next.Format(time.RFC3339Nano), history.KeyErr, why)
}

func (r *Relay) markPublished(ctx context.Context, ids []int64) (int, error) {
	now := r.clock.Now()
	if err := r.take(ctx); err != nil {
		return 0, fmt.Errorf("mark rows published: %w", err)
	}
	defer r.give()
	rows, err := r.pool.Query(ctx, r.sql.mark, ids, r.cfg.Instance, now)
	if err != nil {
		return 0, fmt.Errorf("mark rows published: %w", err)
	}
	defer rows.Close()
	marked := map[int64]bool{}
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			return 0, fmt.Errorf("scan marked row: %w", err)
		}
		marked[id] = true
	}
	if err := rows.Err(); err != nil {
		return 0, fmt.Errorf("mark rows published: %w", err)
	}
	for _, id := range ids {
		if !marked[id] {
			r.log.Warn("lease lost before marking", history.KeyEvent, history.LostLease, history.KeyOutboxID, id)
		}
	}
	r.log.Info("marked published", history.KeyEvent, history.Mark, history.KeyCount, len(marked))
	return len(marked), nil
}

func ids(rows []claimed) []int64 {
	out := make([]int64, len(rows))
	for i, r := range rows {
		out[i] = r.id
	}
	return out
}
