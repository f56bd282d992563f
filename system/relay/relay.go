// Package relay owns the outbox status transitions after enqueue (SPEC §3):
// it claims due PENDING rows with one committed SKIP LOCKED statement and a
// lease, decides per row (expire, defer an ad, skip for consent or a
// non-production number), publishes the batch with pipelined confirms, and
// only then marks rows PUBLISHED.
//
// No row lock is held while publishing. Every write after the claim is
// conditional on status='PUBLISHING' AND claimed_by=<this run>, so a run that
// lost its lease writes 0 rows. At the start of each run, rows whose lease
// passed go back to PENDING (CLAIM_EXPIRED). A confirmed row is never released
// early: if marking fails, the lease expires and the row is republished with
// the same message_id, which the inbox absorbs.
package relay

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/outboxchaos/outboxchaos/system/alert"
	"github.com/outboxchaos/outboxchaos/system/broker"
	"github.com/outboxchaos/outboxchaos/system/canary"
	"github.com/outboxchaos/outboxchaos/system/clock"
	"github.com/outboxchaos/outboxchaos/system/config"
	"github.com/outboxchaos/outboxchaos/system/killpoint"
	"github.com/outboxchaos/outboxchaos/system/notification"
	"github.com/outboxchaos/outboxchaos/system/periodic"
	"github.com/outboxchaos/outboxchaos/system/publisher"
)

// Publisher is what the relay needs from publisher.Publisher.
type Publisher interface {
	PublishBatch(ctx context.Context, msgs []publisher.Message) ([]publisher.Result, error)
}

// Relay moves outbox rows to the broker.
type Relay struct {
	cfg    config.Config
	pool   *pgxpool.Pool
	pub    Publisher
	clock  clock.Clock
	alerts alert.Sender
	log    *slog.Logger

	loop periodic.Loop
}

// New returns a relay. claimedBy is cfg.Instance.
func New(cfg config.Config, pool *pgxpool.Pool, pub Publisher, clk clock.Clock, alerts alert.Sender, log *slog.Logger) *Relay {
	return &Relay{cfg: cfg, pool: pool, pub: pub, clock: clk, alerts: alerts, log: log.With("component", "relay")}
}

// Stats counts what one run did.
type Stats struct {
	Reclaimed, Claimed, Published, Failed, Expired, Deferred, Skipped, Invalid, LostLease int
}

type claimed struct {
	id            int64
	dedupKey      string
	payload       []byte
	advertising   bool
	scheduledDate time.Time
	attempts      int
}

// batch is a claimed batch on its way to the broker.
type batch struct {
	ctx     context.Context // detached from cancellation once claimed
	now     time.Time
	rows    []claimed // the rows to publish, in msgs order
	msgs    []publisher.Message
	pending *publisher.Pending // Drain: sent, confirms outstanding
	sendErr error              // Drain: nothing of the batch went out
}

// Async is implemented by publisher.Publisher: send a batch now, await its
// confirms later. Drain uses it to overlap batches.
type Async interface {
	Send(ctx context.Context, msgs []publisher.Message) (*publisher.Pending, error)
	Await(ctx context.Context, pd *publisher.Pending) []publisher.Result
}

func (s *Stats) add(o Stats) {
	s.Reclaimed += o.Reclaimed
	s.Claimed += o.Claimed
	s.Published += o.Published
	s.Failed += o.Failed
	s.Expired += o.Expired
	s.Deferred += o.Deferred
	s.Skipped += o.Skipped
	s.Invalid += o.Invalid
	s.LostLease += o.LostLease
}

// RunOnce performs one relay run: reclaim expired leases, claim a batch,
// decide, publish, wait for the confirms, mark.
func (r *Relay) RunOnce(ctx context.Context) (Stats, error) {
	b, st, err := r.prepare(ctx, true)
	if err != nil || b == nil {
		return st, err
	}
	results, err := r.pub.PublishBatch(b.ctx, b.msgs)
	done, err := r.settle(b, results, err)
	st.add(done)
	return st, err
}

// Drain runs batches back to back until a claim comes back short (a
// backlog's catch-up). While earlier batches' confirms are awaited and
// their rows marked (in goroutines), the next batch is claimed and
// published, so the broker and the database work at the same time; at most
// drainSettling+1 batches are in flight. Every rule of RunOnce holds per batch: publish → confirm → mark,
// writes conditional on the lease. Expired leases are reclaimed once, at the
// start of the drain (it is one run). Without an Async publisher it is a
// loop of RunOnce.
func (r *Relay) Drain(ctx context.Context) (Stats, error) {
	var total Stats
	async, ok := r.pub.(Async)
	if !ok {
		for {
			st, err := r.RunOnce(ctx)
			total.add(st)
			if err != nil || st.Claimed < r.cfg.BatchSize || ctx.Err() != nil {
				return total, err
			}
		}
	}
	var mu sync.Mutex // guards total and firstErr
	var firstErr error
	record := func(st Stats, err error) {
		mu.Lock()
		defer mu.Unlock()
		total.add(st)
		if err != nil && firstErr == nil {
			firstErr = err
		}
	}
	failed := func() bool {
		mu.Lock()
		defer mu.Unlock()
		return firstErr != nil
	}
	// Up to drainSettling batches await their confirms and marks in
	// goroutines while the next one is claimed and sent.
	sem := make(chan struct{}, drainSettling)
	var wg sync.WaitGroup
	settle := func(b *batch) {
		defer wg.Done()
		defer func() { <-sem }()
		var results []publisher.Result
		if b.sendErr == nil {
			results = async.Await(b.ctx, b.pending)
		}
		record(r.settle(b, results, b.sendErr))
	}
	for first := true; ; first = false {
		var b *batch
		full := false
		if ctx.Err() == nil && !failed() {
			var st Stats
			var err error
			b, st, err = r.prepare(ctx, first)
			record(st, err)
			full = err == nil && st.Claimed == r.cfg.BatchSize
			if b != nil {
				b.pending, b.sendErr = async.Send(b.ctx, b.msgs)
			}
		}
		if b != nil {
			sem <- struct{}{}
			wg.Add(1)
			go settle(b)
		}
		if !full || failed() {
			wg.Wait()
			mu.Lock()
			defer mu.Unlock()
			return total, firstErr
		}
	}
}

// drainSettling is how many batches Drain lets await their confirms while
// it claims and sends the next.
const drainSettling = 2

// prepare reclaims expired leases (if reclaim), claims a batch and decides
// each row. It returns the rows to publish (nil when there are none).
func (r *Relay) prepare(ctx context.Context, reclaim bool) (*batch, Stats, error) {
	var st Stats
	now := r.clock.Now()
	if reclaim {
		n, err := r.reclaim(ctx, now)
		if err != nil {
			return nil, st, err
		}
		st.Reclaimed = n
	}
	rows, err := r.claim(ctx, now)
	if err != nil {
		return nil, st, err
	}
	st.Claimed = len(rows)
	if len(rows) == 0 {
		return nil, st, nil
	}
	r.log.Info("claimed rows", "event", "claim", "count", len(rows), "ids", ids(rows))
	if canary.On(canary.MarkBeforePublish) {
		if _, err := r.markPublished(ctx, ids(rows)); err != nil {
			return nil, st, err
		}
	}
	killpoint.Hit(killpoint.RelayAfterClaim)
	// From here the run finishes its batch even if asked to stop: a
	// half-done batch would only wait out its lease.
	ctx = context.WithoutCancel(ctx)

	members, registered, err := r.lookups(ctx, rows)
	if err != nil {
		// Nothing published yet: the lease will hand these rows back.
		return nil, st, err
	}
	b := &batch{ctx: ctx, now: now}
	for _, row := range rows {
		var p notification.Payload
		if err := json.Unmarshal(row.payload, &p); err != nil {
			st.Invalid++
			r.finish(ctx, row, "FAILED", "MALFORMED_PAYLOAD", alert.KindRelayFailed, now)
			continue
		}
		today := clock.Date(now)
		switch {
		case row.scheduledDate.Before(time.Date(today.Year(), today.Month(), today.Day(), 0, 0, 0, 0, time.UTC)) && !canary.On(canary.NoExpiry):
			st.Expired++
			r.finish(ctx, row, "EXPIRED", "SCHEDULED_DATE_PASSED", alert.KindExpired, now)
			continue
		case row.advertising && r.adBlocked(now) && !canary.On(canary.NoAdDeferral):
			st.Deferred++
			r.defer_(ctx, row, r.adResume(now), now)
			continue
		}
		if ok, known := members[p.MemberID]; !known || !ok {
			st.Skipped++
			reason := "NO_SMS_CONSENT"
			if !known {
				reason = "MEMBER_NOT_FOUND"
			}
			r.finish(ctx, row, "SKIPPED", reason, "", now)
			continue
		}
		if !r.cfg.Production && !registered[p.Phone] {
			st.Skipped++
			r.finish(ctx, row, "SKIPPED", "NON_PRODUCTION_NUMBER", "", now)
			continue
		}
		p.OutboxID, p.DedupKey = row.id, row.dedupKey
		body, err := json.Marshal(p)
		if err != nil {
			return nil, st, fmt.Errorf("encode message of outbox row %d: %w", row.id, err)
		}
		b.rows = append(b.rows, row)
		msgID := notification.MessageID(row.id)
		if canary.On(canary.FreshMessageID) {
			msgID = fmt.Sprintf("%s-%d", msgID, time.Now().UnixNano())
		}
		b.msgs = append(b.msgs, publisher.Message{MessageID: msgID, RoutingKey: broker.KeySend, Body: body})
	}
	if len(b.msgs) == 0 {
		return nil, st, nil
	}
	return b, st, nil
}

// settle handles a published batch's outcomes: confirmed rows are marked
// PUBLISHED, the others go back to PENDING with backoff. pubErr means
// nothing of the batch went out.
func (r *Relay) settle(b *batch, results []publisher.Result, pubErr error) (Stats, error) {
	var st Stats
	ctx, now := b.ctx, b.now
	if pubErr != nil {
		// Nothing went out: release now with backoff.
		for _, row := range b.rows {
			st.Failed++
			r.fail(ctx, row, pubErr.Error(), now)
		}
		return st, fmt.Errorf("publish batch: %w", pubErr)
	}
	killpoint.Hit(killpoint.RelayAfterConfirm)
	var ok []int64
	for i, res := range results {
		row := b.rows[i]
		r.log.Info("publish outcome", "event", "publish", "outbox_id", row.id, "message_id", res.MessageID,
			"dedup_key", row.dedupKey, "outcome", res.Outcome.String(), "indefinite", res.Outcome.Indefinite())
		if res.Outcome == publisher.Confirmed {
			ok = append(ok, row.id)
			continue
		}
		st.Failed++
		r.fail(ctx, row, fmt.Sprintf("%s: %v", res.Outcome, res.Err), now)
	}
	if len(ok) > 0 {
		n, err := r.markPublished(ctx, ok)
		if err != nil {
			// Confirmed rows stay PUBLISHING: the lease republishes them.
			return st, err
		}
		st.Published = n
		st.LostLease += len(ok) - n
	}
	return st, nil
}

func (r *Relay) adBlocked(now time.Time) bool {
	m := now.Hour()*60 + now.Minute()
	return m >= r.cfg.AdPublishCutoff.Minutes() || m < r.cfg.AdResumeAt.Minutes()
}

// adResume is the next AdResumeAt after now.
func (r *Relay) adResume(now time.Time) time.Time {
	t := r.cfg.AdResumeAt.On(now)
	if !t.After(now) {
		t = r.cfg.AdResumeAt.On(clock.At(now, 12, 0).Add(24 * time.Hour))
	}
	return t
}

func (r *Relay) reclaim(ctx context.Context, now time.Time) (int, error) {
	tag, err := r.pool.Exec(ctx, `
		UPDATE notification_outbox
		   SET status = 'PENDING', claimed_by = NULL, claimed_until = NULL,
		       status_reason = 'CLAIM_EXPIRED', updated_at = $1
		 WHERE status = 'PUBLISHING' AND claimed_until < $1`, now)
	if err != nil {
		return 0, fmt.Errorf("reclaim expired leases: %w", err)
	}
	if n := int(tag.RowsAffected()); n > 0 {
		r.log.Info("reclaimed expired leases", "event", "reclaim", "count", n)
	}
	return int(tag.RowsAffected()), nil
}

// ClaimSQL is the one-statement claim of SPEC §3 (exported for benchmarks and
// EXPLAIN). The locking subquery sits in ARRAY(...) so it runs exactly once
// (an InitPlan): as "id IN (SELECT …)" the planner may pick a nested-loop
// semi-join that rescans it per outer row, and each rescan skips the rows
// this statement already updated and locks the next LIMIT rows, so one run
// claimed every due row instead of at most BatchSize.
const ClaimSQL = `
	UPDATE notification_outbox
	   SET status = 'PUBLISHING', claimed_by = $1, claimed_until = $2, updated_at = $3
	 WHERE id = ANY(ARRAY(SELECT id FROM notification_outbox
	               WHERE status = 'PENDING' AND next_attempt_at <= $3
	               ORDER BY next_attempt_at, id
	               LIMIT $4
	               FOR UPDATE SKIP LOCKED))
	   AND status = 'PENDING'
	RETURNING id, dedup_key, payload, advertising, scheduled_date, attempts`

// claimSQLNoSkipLocked is the NoSkipLocked canary: no row locks and no
// status re-check, so overlapping runs claim the same rows.
const claimSQLNoSkipLocked = `
	UPDATE notification_outbox
	   SET status = 'PUBLISHING', claimed_by = $1, claimed_until = $2, updated_at = $3
	 WHERE id = ANY(ARRAY(SELECT id FROM notification_outbox
	                      WHERE status = 'PENDING' AND next_attempt_at <= $3
	                      ORDER BY next_attempt_at, id
	                      LIMIT $4))
	RETURNING id, dedup_key, payload, advertising, scheduled_date, attempts`

func (r *Relay) claim(ctx context.Context, now time.Time) ([]claimed, error) {
	q := ClaimSQL
	args := []any{r.cfg.Instance, now.Add(r.cfg.Lease), now, r.cfg.BatchSize}
	switch {
	case canary.On(canary.NoSkipLocked):
		q = claimSQLNoSkipLocked
	case canary.On(canary.RecentOnly):
		q = strings.Replace(ClaimSQL, "AND next_attempt_at <= $3", "AND next_attempt_at <= $3 AND created_at >= $5", 1)
		args = append(args, now.Add(-r.cfg.RelayInterval))
	}
	rows, err := r.pool.Query(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("claim outbox rows: %w", err)
	}
	defer rows.Close()
	var out []claimed
	for rows.Next() {
		var c claimed
		if err := rows.Scan(&c.id, &c.dedupKey, &c.payload, &c.advertising, &c.scheduledDate, &c.attempts); err != nil {
			return nil, fmt.Errorf("scan claimed row: %w", err)
		}
		out = append(out, c)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("claim outbox rows: %w", err)
	}
	return out, nil
}

// lookups re-reads consent (members) and the registered test numbers.
func (r *Relay) lookups(ctx context.Context, rows []claimed) (map[int64]bool, map[string]bool, error) {
	var memberIDs []int64
	var phones []string
	for _, row := range rows {
		var p notification.Payload
		if json.Unmarshal(row.payload, &p) == nil {
			memberIDs = append(memberIDs, p.MemberID)
			phones = append(phones, p.Phone)
		}
	}
	members := map[int64]bool{}
	q, err := r.pool.Query(ctx, `SELECT id, sms_consent AND active FROM members WHERE id = ANY($1)`, memberIDs)
	if err != nil {
		return nil, nil, fmt.Errorf("re-check SMS consent: %w", err)
	}
	for q.Next() {
		var id int64
		var ok bool
		if err := q.Scan(&id, &ok); err != nil {
			q.Close()
			return nil, nil, fmt.Errorf("scan consent: %w", err)
		}
		members[id] = ok
	}
	q.Close()
	if err := q.Err(); err != nil {
		return nil, nil, fmt.Errorf("re-check SMS consent: %w", err)
	}
	registered := map[string]bool{}
	if !r.cfg.Production {
		q, err := r.pool.Query(ctx, `SELECT phone FROM registered_numbers WHERE phone = ANY($1)`, phones)
		if err != nil {
			return nil, nil, fmt.Errorf("check registered numbers: %w", err)
		}
		for q.Next() {
			var p string
			if err := q.Scan(&p); err != nil {
				q.Close()
				return nil, nil, fmt.Errorf("scan registered number: %w", err)
			}
			registered[p] = true
		}
		q.Close()
		if err := q.Err(); err != nil {
			return nil, nil, fmt.Errorf("check registered numbers: %w", err)
		}
	}
	return members, registered, nil
}

const whereMine = ` WHERE id = $1 AND status = 'PUBLISHING' AND claimed_by = $2`

// mine returns the condition of every write after the claim.
func mine() string {
	if canary.On(canary.NoClaimedBy) {
		return ` WHERE id = $1 AND status = 'PUBLISHING' AND $2::text IS NOT NULL`
	}
	return whereMine
}

// finish moves a claimed row to a final status, alerting when alertKind is
// set.
func (r *Relay) finish(ctx context.Context, row claimed, status, reason, alertKind string, now time.Time) {
	alertWith := func(why string) {
		if alertKind != "" {
			r.alerts.Send(ctx, alert.Alert{Kind: alertKind, OutboxID: row.id, MessageID: notification.MessageID(row.id),
				DedupKey: row.dedupKey, Reason: why, Instance: r.cfg.Instance, At: now})
		}
	}
	tag, err := r.pool.Exec(ctx, `UPDATE notification_outbox SET status = $3, status_reason = $4, updated_at = $5`+mine(),
		row.id, r.cfg.Instance, status, reason, now)
	if err == nil {
		err = killpoint.Fail(killpoint.FailFinishResponse)
	}
	if err != nil {
		r.log.Error("write final status", "event", "write-failed", "outbox_id", row.id, "status", status, "err", err)
		// The UPDATE may have committed with only its answer lost: a final
		// status written without its alert is a silent loss. Alert anyway;
		// if it did not commit, the lease hands the row back and the next
		// run alerts again (two alerts, never none).
		alertWith(reason + " (status write outcome unknown: " + err.Error() + ")")
		return
	}
	if tag.RowsAffected() == 0 {
		r.log.Warn("lease lost, status not written", "event", "lost-lease", "outbox_id", row.id, "status", status)
		return
	}
	r.log.Info("row finished", "event", "outbox-final", "outbox_id", row.id, "dedup_key", row.dedupKey,
		"status", status, "reason", reason)
	alertWith(reason)
}

func (r *Relay) defer_(ctx context.Context, row claimed, until, now time.Time) {
	tag, err := r.pool.Exec(ctx, `UPDATE notification_outbox
		SET status = 'PENDING', claimed_by = NULL, claimed_until = NULL, next_attempt_at = $3,
		    status_reason = 'AD_CUTOFF_DEFERRED', updated_at = $4`+mine(),
		row.id, r.cfg.Instance, until, now)
	if err != nil {
		r.log.Error("defer ad", "event", "write-failed", "outbox_id", row.id, "err", err)
		return
	}
	if tag.RowsAffected() == 1 {
		r.log.Info("ad deferred past cut-off", "event", "ad-deferred", "outbox_id", row.id, "until", until.Format(time.RFC3339))
	}
}

// fail releases a row whose publish failed, with backoff; the AlertAttempt-th
// failure raises an alert.
func (r *Relay) fail(ctx context.Context, row claimed, why string, now time.Time) {
	attempt := row.attempts + 1
	next := now.Add(r.cfg.BackoffFor(attempt))
	tag, err := r.pool.Exec(ctx, `UPDATE notification_outbox
		SET status = 'PENDING', attempts = $3, next_attempt_at = $4, last_error = $5,
		    claimed_by = NULL, claimed_until = NULL, status_reason = 'PUBLISH_FAILED', updated_at = $6`+mine(),
		row.id, r.cfg.Instance, attempt, next, why, now)
	if err != nil {
		r.log.Error("release failed row", "event", "write-failed", "outbox_id", row.id, "err", err)
		return
	}
	if tag.RowsAffected() == 0 {
		r.log.Warn("lease lost, failure not written", "event", "lost-lease", "outbox_id", row.id)
		return
	}
	r.log.Warn("publish failed, backing off", "event", "publish-failed", "outbox_id", row.id, "attempt", attempt,
		"next_attempt_at", next.Format(time.RFC3339Nano), "err", why)
	if attempt == r.cfg.AlertAttempt {
		r.alerts.Send(ctx, alert.Alert{Kind: alert.KindRelayAttempts, OutboxID: row.id, MessageID: notification.MessageID(row.id),
			DedupKey: row.dedupKey, Reason: fmt.Sprintf("attempt %d: %s", attempt, why), Instance: r.cfg.Instance, At: now})
	}
}

func (r *Relay) markPublished(ctx context.Context, ids []int64) (int, error) {
	now := r.clock.Now()
	rows, err := r.pool.Query(ctx, `UPDATE notification_outbox
		SET status = 'PUBLISHED', published_at = $3, status_reason = NULL, updated_at = $3
		WHERE id = ANY($1) AND status = 'PUBLISHING' AND (claimed_by = $2 OR $4)
		RETURNING id`, ids, r.cfg.Instance, now, canary.On(canary.NoClaimedBy))
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
			r.log.Warn("lease lost before marking", "event", "lost-lease", "outbox_id", id)
		}
	}
	r.log.Info("marked published", "event", "mark", "count", len(marked))
	return len(marked), nil
}

func ids(rows []claimed) []int64 {
	out := make([]int64, len(rows))
	for i, r := range rows {
		out[i] = r.id
	}
	return out
}

// InWindow reports whether t is inside the relay's daily window.
func (r *Relay) InWindow(t time.Time) bool {
	m := t.Hour()*60 + t.Minute()
	return m >= r.cfg.RelayFrom.Minutes() && m <= r.cfg.RelayUntil.Minutes()
}

// Start runs RunOnce every RelayInterval inside the daily window until Stop
// (Drain instead, with RelayDrain set: a backlog is then caught up at once).
// It returns once the loop is running.
func (r *Relay) Start(ctx context.Context) error {
	if err := r.loop.Start(ctx, r.cfg.RelayInterval, r.tick); err != nil {
		return fmt.Errorf("start relay: %w", err)
	}
	return nil
}

// tick is one timer firing: a run inside the daily window.
func (r *Relay) tick(ctx context.Context) {
	if !r.InWindow(r.clock.Now()) {
		return
	}
	run := r.RunOnce
	if r.cfg.RelayDrain {
		run = r.Drain
	}
	st, err := run(ctx)
	if err != nil && ctx.Err() == nil {
		r.log.Error("relay run failed", "event", "run-failed", "err", err)
	} else if st.Claimed > 0 || st.Reclaimed > 0 {
		r.log.Info("relay run", "event", "run", "claimed", st.Claimed, "published", st.Published,
			"failed", st.Failed, "expired", st.Expired, "deferred", st.Deferred, "skipped", st.Skipped)
	}
}

// Stop ends the loop and waits for the current run. Safe to call twice or
// before Start.
func (r *Relay) Stop() { r.loop.Stop() }
