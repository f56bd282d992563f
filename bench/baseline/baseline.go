// Package baseline holds the two classic relay designs the benchmark compares
// system/relay with. They exist only for the benchmark and must never be used
// to relay real notifications: each is either slow or unsafe in a way the
// pipeline's design (design §3, §7) avoids.
//
//   - SeedStyle claims a batch the way system/relay does, then publishes one
//     row, waits for its confirm and marks that row before the next: safe,
//     but every message pays a full broker round trip plus a commit.
//   - LockHolding is the variant of the multi-replica write-up: SELECT … FOR
//     UPDATE SKIP LOCKED in a transaction, publish the batch with pipelined
//     confirms, mark, commit. Fast, but the row locks live as long as the
//     publish, and a crash after the publish and before the commit
//     republishes the whole batch.
//
// Both publish through the real system/publisher (the seed-style relay in
// batches of one), so what differs from system/relay is only the design.
// Neither re-checks SMS consent or registered numbers, and neither handles
// expiry or advertising deferral: compared with system/relay they do less
// work per batch, which favours them in the ratios.
package baseline

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/outboxchaos/outboxchaos/system/broker"
	"github.com/outboxchaos/outboxchaos/system/clock"
	"github.com/outboxchaos/outboxchaos/system/notification"
	"github.com/outboxchaos/outboxchaos/system/publisher"
	"github.com/outboxchaos/outboxchaos/system/relay"
)

// Publisher is what the baselines need from publisher.Publisher.
type Publisher interface {
	PublishBatch(ctx context.Context, msgs []publisher.Message) ([]publisher.Result, error)
}

// Stats counts what one run did.
type Stats struct {
	Claimed, Published, Failed int
}

// Options configure a baseline relay.
type Options struct {
	Instance  string        // claimed_by
	BatchSize int           // rows per run
	Lease     time.Duration // SeedStyle only: the claim's lease
}

// markOneSQL marks one row PUBLISHED, conditional on the claim like
// system/relay's writes.
const markOneSQL = `UPDATE notification_outbox
	SET status = 'PUBLISHED', published_at = $3, status_reason = NULL, updated_at = $3
	WHERE id = $1 AND status = 'PUBLISHING' AND claimed_by = $2`

// releaseOneSQL gives a row whose publish failed back (no backoff: the
// benchmark only needs the row not to be lost).
const releaseOneSQL = `UPDATE notification_outbox
	SET status = 'PENDING', claimed_by = NULL, claimed_until = NULL, attempts = attempts + 1, updated_at = $3
	WHERE id = $1 AND status = 'PUBLISHING' AND claimed_by = $2`

// SeedStyle is the one-confirm-at-a-time relay.
type SeedStyle struct {
	pool  *pgxpool.Pool
	pub   Publisher
	clock clock.Clock
	opts  Options
}

// NewSeedStyle returns a seed-style relay.
func NewSeedStyle(pool *pgxpool.Pool, pub Publisher, clk clock.Clock, opts Options) *SeedStyle {
	return &SeedStyle{pool: pool, pub: pub, clock: clk, opts: opts}
}

// RunOnce claims up to BatchSize due rows with relay.ClaimSQL (one committed
// statement, with a lease), then for each row: publish, wait for the
// confirm, mark PUBLISHED.
func (s *SeedStyle) RunOnce(ctx context.Context) (Stats, error) {
	var st Stats
	now := s.clock.Now()
	rows, err := s.pool.Query(ctx, relay.ClaimSQL, s.opts.Instance, now.Add(s.opts.Lease), now, s.opts.BatchSize)
	if err != nil {
		return st, fmt.Errorf("seed-style claim: %w", err)
	}
	claimed, err := scanRows(rows, true)
	if err != nil {
		return st, fmt.Errorf("seed-style claim: %w", err)
	}
	st.Claimed = len(claimed)
	for _, r := range claimed {
		msg, err := r.message()
		if err != nil {
			return st, err
		}
		res, err := s.pub.PublishBatch(ctx, []publisher.Message{msg})
		if err == nil && res[0].Outcome != publisher.Confirmed {
			err = fmt.Errorf("%s: %v", res[0].Outcome, res[0].Err)
		}
		if err != nil {
			st.Failed++
			if _, rerr := s.pool.Exec(ctx, releaseOneSQL, r.id, s.opts.Instance, s.clock.Now()); rerr != nil {
				return st, fmt.Errorf("seed-style release row %d after %v: %w", r.id, err, rerr)
			}
			continue
		}
		tag, err := s.pool.Exec(ctx, markOneSQL, r.id, s.opts.Instance, s.clock.Now())
		if err != nil {
			return st, fmt.Errorf("seed-style mark row %d: %w", r.id, err)
		}
		st.Published += int(tag.RowsAffected())
	}
	return st, nil
}

// lockSQL selects and locks a batch inside the caller's transaction.
const lockSQL = `SELECT id, dedup_key, payload FROM notification_outbox
	WHERE status = 'PENDING' AND next_attempt_at <= $1
	ORDER BY next_attempt_at, id
	LIMIT $2
	FOR UPDATE SKIP LOCKED`

// markLockedSQL marks the confirmed rows inside the same transaction.
const markLockedSQL = `UPDATE notification_outbox
	SET status = 'PUBLISHED', published_at = $2, status_reason = NULL, updated_at = $2
	WHERE id = ANY($1)`

// LockHolding is the relay that holds its row locks over the publish.
type LockHolding struct {
	pool  *pgxpool.Pool
	pub   Publisher
	clock clock.Clock
	opts  Options
}

// NewLockHolding returns a lock-holding relay.
func NewLockHolding(pool *pgxpool.Pool, pub Publisher, clk clock.Clock, opts Options) *LockHolding {
	return &LockHolding{pool: pool, pub: pub, clock: clk, opts: opts}
}

// RunOnce begins a transaction, locks up to BatchSize due rows with FOR
// UPDATE SKIP LOCKED, publishes them with pipelined confirms, marks the
// confirmed ones PUBLISHED and commits. Rows whose publish failed stay
// PENDING when the locks go.
func (l *LockHolding) RunOnce(ctx context.Context) (st Stats, err error) {
	tx, err := l.pool.Begin(ctx)
	if err != nil {
		return st, fmt.Errorf("lock-holding begin: %w", err)
	}
	defer func() {
		if err != nil {
			_ = tx.Rollback(context.WithoutCancel(ctx))
		}
	}()
	rows, err := tx.Query(ctx, lockSQL, l.clock.Now(), l.opts.BatchSize)
	if err != nil {
		return st, fmt.Errorf("lock-holding select: %w", err)
	}
	locked, err := scanRows(rows, false)
	if err != nil {
		return st, fmt.Errorf("lock-holding select: %w", err)
	}
	st.Claimed = len(locked)
	if len(locked) == 0 {
		return st, tx.Commit(ctx)
	}
	msgs := make([]publisher.Message, len(locked))
	for i, r := range locked {
		if msgs[i], err = r.message(); err != nil {
			return st, err
		}
	}
	results, err := l.pub.PublishBatch(ctx, msgs)
	if err != nil {
		return st, fmt.Errorf("lock-holding publish: %w", err)
	}
	ok := make([]int64, 0, len(results))
	for i, res := range results {
		if res.Outcome == publisher.Confirmed {
			ok = append(ok, locked[i].id)
		} else {
			st.Failed++
		}
	}
	tag, err := tx.Exec(ctx, markLockedSQL, ok, l.clock.Now())
	if err != nil {
		return st, fmt.Errorf("lock-holding mark: %w", err)
	}
	if err := tx.Commit(ctx); err != nil {
		return st, fmt.Errorf("lock-holding commit: %w", err)
	}
	st.Published = int(tag.RowsAffected())
	return st, nil
}

type row struct {
	id       int64
	dedupKey string
	payload  []byte
}

// scanRows reads id, dedup_key, payload (and, for a relay.ClaimSQL result,
// skips the other returned columns).
func scanRows(rows pgx.Rows, claimColumns bool) ([]row, error) {
	defer rows.Close()
	var out []row
	for rows.Next() {
		var r row
		var err error
		if claimColumns {
			var adv bool
			var sched time.Time
			var attempts int
			err = rows.Scan(&r.id, &r.dedupKey, &r.payload, &adv, &sched, &attempts)
		} else {
			err = rows.Scan(&r.id, &r.dedupKey, &r.payload)
		}
		if err != nil {
			return nil, fmt.Errorf("scan outbox row: %w", err)
		}
		out = append(out, r)
	}
	return out, rows.Err()
}

// message builds the message system/relay would publish for r.
func (r row) message() (publisher.Message, error) {
	var p notification.Payload
	if err := json.Unmarshal(r.payload, &p); err != nil {
		return publisher.Message{}, fmt.Errorf("decode payload of outbox row %d: %w", r.id, err)
	}
	p.OutboxID, p.DedupKey = r.id, r.dedupKey
	body, err := json.Marshal(p)
	if err != nil {
		return publisher.Message{}, fmt.Errorf("encode message of outbox row %d: %w", r.id, err)
	}
	return publisher.Message{MessageID: notification.MessageID(r.id), RoutingKey: broker.KeySend, Body: body}, nil
}
