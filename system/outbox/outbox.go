// Package outbox owns the batch side's only write: the insert-ignore of a
// notification into notification_outbox (design §2). The same business event
// always yields the same dedup_key, so re-running a job that died half-way
// inserts nothing new for members already enqueued.
//
// Status belongs to the relay once the row exists:
//
//	PENDING ─claim─▶ PUBLISHING ─confirm─▶ PUBLISHED
//	   ▲                 │  ├─ consent/number ─▶ SKIPPED
//	   └─fail/lease/ad───┘  ├─ past date ───────▶ EXPIRED (+alert)
//	                        └─ bad payload ─────▶ FAILED (+alert)
package outbox

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/outboxchaos/outboxchaos/system/canary"
	"github.com/outboxchaos/outboxchaos/system/notification"
)

// Execer is a pool, a connection or a transaction.
type Execer interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
}

// Entry is one notification to enqueue.
type Entry struct {
	DedupKey string
	Payload  notification.Payload
}

// ErrInvalid wraps every rejected entry.
var ErrInvalid = errors.New("invalid outbox entry")

// Validate rejects an entry that could never be sent, before it is written.
func (e Entry) Validate() error {
	switch {
	case e.DedupKey == "":
		return fmt.Errorf("%w: empty dedup_key", ErrInvalid)
	case !e.Payload.Kind.Known():
		return fmt.Errorf("%w: unknown notification kind %q", ErrInvalid, e.Payload.Kind)
	case e.Payload.Phone == "":
		return fmt.Errorf("%w: %s: empty phone", ErrInvalid, e.DedupKey)
	}
	if _, err := time.Parse(time.DateOnly, e.Payload.ScheduledDate); err != nil {
		return fmt.Errorf("%w: %s: scheduled_date: %v", ErrInvalid, e.DedupKey, err)
	}
	return nil
}

// insertSQL is the insert-ignore of design §2: a second enqueue of the same
// dedup_key inserts nothing.
const insertSQL = `
		INSERT INTO notification_outbox
			(dedup_key, kind, payload, advertising, scheduled_date, status, next_attempt_at, created_at, updated_at)
		VALUES ($1, $2, $3, $4, $5, 'PENDING', $6, $6, $6)
		ON CONFLICT (dedup_key) DO NOTHING`

// insertSQLPlain is the PlainInsert canary: insertSQL without its ON
// CONFLICT clause, so a re-run of a job fails on the dedup_key.
const insertSQLPlain = `
		INSERT INTO notification_outbox
			(dedup_key, kind, payload, advertising, scheduled_date, status, next_attempt_at, created_at, updated_at)
		VALUES ($1, $2, $3, $4, $5, 'PENDING', $6, $6, $6)`

// Inserter enqueues with one insert statement, chosen when it is built. The
// zero Inserter uses the insert-ignore.
type Inserter struct {
	sql string // insertSQL or a canary's variant; "" means insertSQL
}

// NewInserter returns the inserter of this process: the insert-ignore, or
// the plain INSERT when the PlainInsert canary is armed.
func NewInserter() Inserter {
	if canary.On(canary.PlainInsert) {
		return Inserter{sql: insertSQLPlain}
	}
	return Inserter{sql: insertSQL}
}

// Enqueue inserts e with the insert-ignore (never a canary's variant). See
// Inserter.Enqueue.
func Enqueue(ctx context.Context, db Execer, now time.Time, e Entry) (bool, error) {
	return Inserter{}.Enqueue(ctx, db, now, e)
}

// Enqueue inserts e unless a row with its dedup_key exists ("insertIgnore").
// It reports whether a row was inserted. now is the clock's time (never SQL
// now()); the row is due at once.
func (in Inserter) Enqueue(ctx context.Context, db Execer, now time.Time, e Entry) (bool, error) {
	if err := e.Validate(); err != nil {
		return false, err
	}
	p := e.Payload
	p.OutboxID, p.DedupKey = 0, ""
	body, err := json.Marshal(p)
	if err != nil {
		return false, fmt.Errorf("encode payload of %s: %w", e.DedupKey, err)
	}
	q := in.sql
	if q == "" {
		q = insertSQL
	}
	tag, err := db.Exec(ctx, q,
		e.DedupKey, string(p.Kind), body, p.Advertising, p.ScheduledDate, now)
	if err != nil {
		return false, fmt.Errorf("insert outbox row %s: %w", e.DedupKey, err)
	}
	return tag.RowsAffected() == 1, nil
}

// Row is an outbox row as the relay and checkers see it.
type Row struct {
	ID            int64
	DedupKey      string
	Kind          string
	Payload       []byte
	Advertising   bool
	ScheduledDate time.Time
	Status        string
	Attempts      int
	NextAttemptAt time.Time
	ClaimedBy     *string
	ClaimedUntil  *time.Time
	StatusReason  *string
	LastError     *string
}

// Columns is the select list matching Scan.
const Columns = `id, dedup_key, kind, payload, advertising, scheduled_date, status, attempts,
	next_attempt_at, claimed_by, claimed_until, status_reason, last_error`

// Scan reads Columns into r.
func (r *Row) Scan(row pgx.Row) error {
	return row.Scan(&r.ID, &r.DedupKey, &r.Kind, &r.Payload, &r.Advertising, &r.ScheduledDate, &r.Status,
		&r.Attempts, &r.NextAttemptAt, &r.ClaimedBy, &r.ClaimedUntil, &r.StatusReason, &r.LastError)
}

// Querier runs queries.
type Querier interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
}

// All returns every outbox row ordered by id.
func All(ctx context.Context, db Querier) ([]Row, error) {
	rows, err := db.Query(ctx, `SELECT `+Columns+` FROM notification_outbox ORDER BY id`)
	if err != nil {
		return nil, fmt.Errorf("list outbox rows: %w", err)
	}
	defer rows.Close()
	var out []Row
	for rows.Next() {
		var r Row
		if err := r.Scan(rows); err != nil {
			return nil, fmt.Errorf("scan outbox row: %w", err)
		}
		out = append(out, r)
	}
	return out, rows.Err()
}
