// Package relay owns the outbox status transitions after enqueue (design §3):
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
//
// The per-row decisions are pure functions (decide.go); the SQL, with each
// canary's complete variant next to the real statement, is in
// statements.go; the reads and writes are in store.go.
package relay

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	json "github.com/goccy/go-json"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/outboxchaos/outboxchaos/history"
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

	// Chosen in New, from the armed canary if any:
	sql   statements // the claim, mark and per-row write statements
	rules rules      // the per-row decisions (decide.go)
	// claimSQL is sql.claim with the consent and number lookups (withLookups).
	claimSQL string
	// markBeforePublish marks the claimed rows PUBLISHED before publishing
	// (the MarkBeforePublish canary).
	markBeforePublish bool
	// alertAfterCommit sends a final status's alert after its commit (the
	// AlertAfterCommit canary).
	alertAfterCommit bool
	// attemptsAlert: the AlertAttempt-th failed publish raises an alert
	// (the NoAttemptsAlert canary clears it).
	attemptsAlert bool
	// consentFirstOnly re-reads the first row's member only (the
	// ConsentFirstOnly canary).
	consentFirstOnly bool
	// allOrNothing fails every row of a batch when any publish of it
	// failed (the AllOrNothing canary).
	allOrNothing bool
	// messageID is a row's message_id: notification.MessageID, or a fresh
	// one per publish (the FreshMessageID canary).
	messageID func(outboxID int64) string

	// db is the relay's one turn on the database: every statement it
	// sends waits for it, so a draining relay's claimers and markers take
	// turns and it holds one connection. Statements of one relay on the
	// same pages at once cost PostgreSQL about half as much CPU again per
	// row (contention on the same buffers and index pages) and gained no
	// rate: the broker, not the database, bounds a relay.
	db chan struct{}

	loop periodic.Loop
	// polled: the loop finished its first run (logged once, as the event
	// "first-run": a harness can wait for the first poll, not for a time).
	polled bool
}

// New returns a relay. claimedBy is cfg.Instance. The armed canary, if any,
// chooses the relay's statements and policies here, once.
func New(cfg config.Config, pool *pgxpool.Pool, pub Publisher, clk clock.Clock, alerts alert.Sender, log *slog.Logger) *Relay {
	bug := canary.Armed()
	r := &Relay{cfg: cfg, pool: pool, pub: pub, clock: clk, alerts: alerts, log: log.With("component", "relay"),
		sql: statementsFor(bug), rules: rulesFor(cfg, bug), markBeforePublish: bug == canary.MarkBeforePublish,
		attemptsAlert: bug != canary.NoAttemptsAlert, consentFirstOnly: bug == canary.ConsentFirstOnly,
		allOrNothing: bug == canary.AllOrNothing, alertAfterCommit: bug == canary.AlertAfterCommit,
		messageID: notification.MessageID, db: make(chan struct{}, 1)}
	r.claimSQL = withLookups(r.sql.claim, cfg.Production)
	if bug == canary.FreshMessageID {
		r.messageID = func(id int64) string { return fmt.Sprintf("%s-%d", notification.MessageID(id), time.Now().UnixNano()) }
	}
	return r
}

// Stats counts what one run did.
type Stats struct {
	Reclaimed, Claimed, Published, Failed, Expired, Deferred, Skipped, Invalid, LostLease int
	// Taken counts rows marked PUBLISHED because the worker had their
	// message already.
	Taken int
}

type claimed struct {
	id            int64
	dedupKey      string
	payload       []byte
	advertising   bool
	scheduledDate time.Time
	attempts      int
	// taken: the inbox holds the row's message already (an earlier
	// claim's publish reached the worker).
	taken bool
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
// backlog's catch-up), as a pipeline: RelayDrainClaimers goroutines claim,
// look up and decide the next batches while the drain goroutine sends the
// previous one, and each sent batch awaits its confirms and is marked in a
// goroutine of its own, at most RelayDrainDepth batches at once; so the
// database and the broker work at the same time. Every rule of RunOnce holds per batch:
// publish → confirm → mark, writes conditional on the lease, and every
// batch claimed is published and settled, even after a failure or a
// cancellation ends the claiming. Expired leases are reclaimed once, at the
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
	// The claimers (RelayDrainClaimers of them; SKIP LOCKED gives each its
	// own rows) claim and decide batches ahead of the one being sent. The
	// first batch, with the reclaim of expired leases, is claimed before
	// they start; the first claim that comes back short stops them all.
	ready := make(chan *batch, max(r.cfg.RelayDrainClaimers, 1))
	var short atomic.Bool
	claimOne := func(reclaim bool) bool {
		b, st, err := r.prepare(ctx, reclaim)
		record(st, err)
		if b != nil {
			ready <- b
		}
		if err != nil || st.Claimed < r.cfg.BatchSize {
			short.Store(true)
			return false
		}
		return true
	}
	var claimers sync.WaitGroup
	if ctx.Err() == nil && claimOne(true) {
		for range max(r.cfg.RelayDrainClaimers, 1) {
			claimers.Add(1)
			go func() {
				defer claimers.Done()
				for ctx.Err() == nil && !failed() && !short.Load() {
					if !claimOne(false) {
						return
					}
				}
			}()
		}
	}
	go func() {
		claimers.Wait()
		close(ready)
	}()
	// The sender: each batch out as soon as fewer than RelayDrainDepth
	// batches await their confirms.
	inFlight := make(chan struct{}, max(r.cfg.RelayDrainDepth, 1))
	var wg sync.WaitGroup
	for b := range ready {
		inFlight <- struct{}{}
		b.pending, b.sendErr = async.Send(b.ctx, b.msgs)
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-inFlight }()
			var results []publisher.Result
			if b.sendErr == nil {
				results = async.Await(b.ctx, b.pending)
			}
			record(r.settle(b, results, b.sendErr))
		}()
	}
	wg.Wait()
	mu.Lock()
	defer mu.Unlock()
	return total, firstErr
}

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
	// began is wall time, not the clock's: it tells a checker when the
	// claim statement could first have locked a row (history.KeyBegan).
	began := time.Now()
	rows, members, registered, err := r.claim(ctx, now)
	if err != nil {
		return nil, st, err
	}
	st.Claimed = len(rows)
	if len(rows) == 0 {
		return nil, st, nil
	}
	r.log.Info("claimed rows", history.KeyEvent, history.Claim, history.KeyCount, len(rows), history.KeyIDs, ids(rows), history.KeyBegan, began, history.KeyNow, now)
	if r.markBeforePublish {
		if _, err := r.markPublished(ctx, ids(rows)); err != nil {
			return nil, st, err
		}
	}
	killpoint.Hit(killpoint.RelayAfterClaim)
	// From here the run finishes its batch even if asked to stop: a
	// half-done batch would only wait out its lease.
	ctx = context.WithoutCancel(ctx)

	b := &batch{ctx: ctx, now: now, rows: make([]claimed, 0, len(rows)), msgs: make([]publisher.Message, 0, len(rows))}
	for _, row := range rows {
		d := r.rules.decide(row, now, members, registered)
		switch d.verdict {
		case failRow:
			st.Invalid++
		case expireRow:
			st.Expired++
		case skipRow:
			st.Skipped++
		case deferRow:
			st.Deferred++
			r.defer_(ctx, row, d.until, now)
			continue
		case takenRow:
			st.Taken++
		case publishRow:
			body, err := json.Marshal(d.payload)
			if err != nil {
				return nil, st, fmt.Errorf("encode message of outbox row %d: %w", row.id, err)
			}
			b.rows = append(b.rows, row)
			b.msgs = append(b.msgs, publisher.Message{MessageID: r.messageID(row.id), RoutingKey: broker.KeySend, Body: body})
			continue
		}
		r.finish(ctx, row, d.status, d.reason, d.alertKind, now)
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
	batchFailed := r.allOrNothing && anyFailed(results)
	var ok []int64
	for i, res := range results {
		row := b.rows[i]
		r.log.Info("publish outcome", history.KeyEvent, history.Publish, history.KeyOutboxID, row.id, history.KeyMessageID, res.MessageID,
			history.KeyDedupKey, row.dedupKey, history.KeyOutcome, res.Outcome.String(), "indefinite", res.Outcome.Indefinite())
		if res.Outcome == publisher.Confirmed && !batchFailed {
			ok = append(ok, row.id)
			continue
		}
		st.Failed++
		r.fail(ctx, row, fmt.Sprintf("%s: %v", res.Outcome, res.Err), now)
	}
	if len(ok) > 0 {
		killpoint.Hit(killpoint.RelayBeforeMark)
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

// anyFailed reports whether any publish of a batch was not confirmed.
func anyFailed(results []publisher.Result) bool {
	for _, res := range results {
		if res.Outcome != publisher.Confirmed {
			return true
		}
	}
	return false
}

// InWindow reports whether t is inside the relay's daily window.
func (r *Relay) InWindow(t time.Time) bool { return r.rules.inWindow(t) }

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
	if err == nil && !r.polled {
		r.polled = true
		r.log.Info("first relay run", history.KeyEvent, history.FirstRun, history.KeyClaimed, st.Claimed)
	}
	if err != nil && ctx.Err() == nil {
		r.log.Error("relay run failed", history.KeyEvent, history.RunFailed, history.KeyErr, err)
	} else if st.Claimed > 0 || st.Reclaimed > 0 {
		r.log.Info("relay run", history.KeyEvent, history.Run, history.KeyClaimed, st.Claimed, "published", st.Published,
			"failed", st.Failed, "expired", st.Expired, "deferred", st.Deferred, "skipped", st.Skipped)
	}
}

// Stop ends the loop and waits for the current run. Safe to call twice or
// before Start.
func (r *Relay) Stop() { r.loop.Stop() }
