// Package inbox owns notification_histories, the worker side's table (design
// §5). Its partial UNIQUE index on message_id is the guard against sending
// twice: a copy of a message may only call the vendor after its claim INSERT
// ('SENDING' … ON CONFLICT (message_id) DO NOTHING) inserted a row.
//
//	(none) ─claim─▶ SENDING ─vendor ok──────▶ SENT
//	   ▲               ├─ vendor unknown ──▶ ERROR (+alert, never retried)
//	   └─release───────┤  definitely not sent: the claim is deleted
//	                   ├─ parked (limit, refusals) ─▶ FAILED (+PARKED alert)
//	                   └─ older than timeout (cleanup) ─▶ ERROR (+alert)
//
// A FAILED row is final for every copy but the parked one an operator
// moves back: that copy reclaims it (FAILED ─▶ SENDING, Reclaim).
//
// The reconciler (system/reconcile) settles ERROR rows from the vendor's
// report: ERROR ─▶ SENT | FAILED, or ERROR ─▶ RESENDING ─▶ SENT | ERROR
// for a re-send (reconcile.go).
package inbox

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// DB is a pool, connection or transaction.
type DB interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// PeekSQL is the peek ($1 the message_id): the status of its history row.
const PeekSQL = `SELECT status FROM notification_histories WHERE message_id = $1`

// Peek is step 1, a fast path and not a guard: the status of the history
// row for messageID, "" when there is none.
func Peek(ctx context.Context, db DB, messageID string) (string, error) {
	var status string
	err := db.QueryRow(ctx, PeekSQL, messageID).Scan(&status)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("peek inbox for %s: %w", messageID, err)
	}
	return status, nil
}

// Claim identifies a message being claimed.
type Claim struct {
	MessageID string
	OutboxID  int64
	DedupKey  string
	Kind      string
	Phone     string
}

// ClaimSQL is the claim INSERT of step 3.
const ClaimSQL = `INSERT INTO notification_histories
	(message_id, outbox_id, dedup_key, kind, phone, status, created_at, updated_at)
	VALUES ($1, $2, $3, $4, $5, 'SENDING', $6, $6)
	ON CONFLICT (message_id) WHERE message_id IS NOT NULL DO NOTHING`

// TryClaim inserts a SENDING row; false means another copy holds it.
func TryClaim(ctx context.Context, db DB, c Claim, now time.Time) (bool, error) {
	tag, err := db.Exec(ctx, ClaimSQL, c.MessageID, c.OutboxID, c.DedupKey, c.Kind, c.Phone, now)
	if err != nil {
		return false, fmt.Errorf("claim %s: %w", c.MessageID, err)
	}
	return tag.RowsAffected() == 1, nil
}

// FinishSQL is the conditional result UPDATE of step 5.
const FinishSQL = `UPDATE notification_histories SET status = $2, vendor_code = $3, error = $4, updated_at = $5
	WHERE message_id = $1 AND status = 'SENDING'`

// Finish writes the result of a send; false means the row was no longer
// SENDING (cleanup already turned it into ERROR).
func Finish(ctx context.Context, db DB, messageID, status, code, errText string, now time.Time) (bool, error) {
	tag, err := db.Exec(ctx, FinishSQL, messageID, status, code, nullable(errText), now)
	if err != nil {
		return false, fmt.Errorf("write result %s of %s: %w", status, messageID, err)
	}
	return tag.RowsAffected() == 1, nil
}

// Reclaim takes a FAILED row back as a SENDING claim, for the parked copy
// of its message an operator moved back: false means the row is not
// FAILED (another copy reclaimed it first).
func Reclaim(ctx context.Context, db DB, messageID string, now time.Time) (bool, error) {
	tag, err := db.Exec(ctx, `UPDATE notification_histories
		SET status = 'SENDING', vendor_code = NULL, error = NULL, created_at = $2, updated_at = $2
		WHERE message_id = $1 AND status = 'FAILED'`, messageID, now)
	if err != nil {
		return false, fmt.Errorf("reclaim %s: %w", messageID, err)
	}
	return tag.RowsAffected() == 1, nil
}

// Release deletes a SENDING claim after a definitely-not-sent failure, so a
// retry can claim again.
func Release(ctx context.Context, db DB, messageID string) (bool, error) {
	tag, err := db.Exec(ctx, `DELETE FROM notification_histories WHERE message_id = $1 AND status = 'SENDING'`, messageID)
	if err != nil {
		return false, fmt.Errorf("release claim %s: %w", messageID, err)
	}
	return tag.RowsAffected() == 1, nil
}

// Row is a history row.
type Row struct {
	MessageID  string
	OutboxID   int64
	DedupKey   string
	Kind       string
	Phone      string
	Status     string
	VendorCode *string
	Error      *string
	CreatedAt  time.Time
	UpdatedAt  time.Time
	// Reconciliation: lookups made, re-sends, how the row was settled
	// ("" while unsettled).
	ReconcileTries int
	Resends        int
	Settled        string
}

const rowColumns = `message_id, coalesce(outbox_id, 0), coalesce(dedup_key, ''), coalesce(kind, ''), coalesce(phone, ''),
	status, vendor_code, error, created_at, updated_at, reconcile_tries, resends, coalesce(settled, '')`

func scanRows(rows pgx.Rows) ([]Row, error) {
	defer rows.Close()
	var out []Row
	for rows.Next() {
		var r Row
		if err := rows.Scan(&r.MessageID, &r.OutboxID, &r.DedupKey, &r.Kind, &r.Phone, &r.Status,
			&r.VendorCode, &r.Error, &r.CreatedAt, &r.UpdatedAt, &r.ReconcileTries, &r.Resends, &r.Settled); err != nil {
			return nil, fmt.Errorf("scan history row: %w", err)
		}
		out = append(out, r)
	}
	return out, rows.Err()
}

// ExpireSending turns SENDING and RESENDING rows claimed before cutoff
// into ERROR and returns them.
func ExpireSending(ctx context.Context, db DB, cutoff, now time.Time) ([]Row, error) {
	rows, err := db.Query(ctx, `UPDATE notification_histories
		SET status = 'ERROR', error = 'SENDING_TIMEOUT', updated_at = $2
		WHERE status IN ('SENDING', 'RESENDING') AND created_at < $1
		RETURNING `+rowColumns, cutoff, now)
	if err != nil {
		return nil, fmt.Errorf("expire SENDING rows: %w", err)
	}
	return scanRows(rows)
}

// All returns every history row ordered by id.
func All(ctx context.Context, db DB) ([]Row, error) {
	rows, err := db.Query(ctx, `SELECT `+rowColumns+` FROM notification_histories ORDER BY id`)
	if err != nil {
		return nil, fmt.Errorf("list history rows: %w", err)
	}
	return scanRows(rows)
}

func nullable(s string) any {
	if s == "" {
		return nil
	}
	return s
}
