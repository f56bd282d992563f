package bench

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/outboxchaos/outboxchaos/bench/baseline"
	"github.com/outboxchaos/outboxchaos/history"
	"github.com/outboxchaos/outboxchaos/system/alert"
	"github.com/outboxchaos/outboxchaos/system/broker"
	"github.com/outboxchaos/outboxchaos/system/config"
	"github.com/outboxchaos/outboxchaos/system/publisher"
	"github.com/outboxchaos/outboxchaos/system/relay"
)

// Table groups.
const (
	groupRaw      = "1. raw limits (client libraries only)"
	groupRelay    = "2. system/relay (PENDING → PUBLISHED)"
	groupBaseline = "3. baseline relay designs (bench-only)"
	groupWorker   = "4. system/worker (delivered → SENT)"
)

// Design names a relay design under test.
type Design string

// The relay designs.
const (
	Ours        Design = "ours"         // system/relay.Relay draining: Relay.Drain
	OursRunOnce Design = "ours-runonce" // system/relay.Relay one batch at a time: RunOnce
	SeedStyle   Design = "seed-style"   // baseline.SeedStyle
	LockHolding Design = "lock-holding" // baseline.LockHolding
)

// replica is one relay instance with its own pool and broker connection, as
// a separate process would have.
type replica struct {
	run   func(ctx context.Context) (claimed, published int, err error)
	pool  *pgxpool.Pool
	pub   *publisher.Publisher
	stats *relay.Stats // ours only: summed
}

func (r *replica) close() {
	if r.pub != nil {
		_ = r.pub.Close()
	}
	if r.pool != nil {
		r.pool.Close()
	}
}

// countingAlerts counts alerts; a clean drain raises none.
type countingAlerts struct{ n atomic.Int64 }

// Send counts a.
func (c *countingAlerts) Send(context.Context, alert.Alert) { c.n.Add(1) }

// newReplica builds one replica of design d; its SQL statements and
// publishes are timed into ph.
func newReplica(ctx context.Context, e *Env, cfg config.Config, d Design, alerts alert.Sender, ph *Phases, drainLat *Latencies) (*replica, error) {
	pool, err := openTracedPool(ctx, cfg, ph)
	if err != nil {
		return nil, err
	}
	r := &replica{pool: pool, pub: publisher.New(cfg.AMQPURL, broker.NamesFor(cfg.Prefix).Exchange, cfg.ConfirmTimeout)}
	if err := r.pub.Connect(ctx); err != nil {
		r.close()
		return nil, fmt.Errorf("connect publisher: %w", err)
	}
	pub := timedPublisher{inner: r.pub, p: ph, lat: drainLat, sent: &sync.Map{}}
	opts := baseline.Options{Instance: cfg.Instance, BatchSize: cfg.BatchSize, Lease: cfg.Lease}
	switch d {
	case Ours, OursRunOnce:
		rl := relay.New(cfg, pool, pub, e.Clock, alerts, e.Log)
		r.stats = &relay.Stats{}
		r.run = func(ctx context.Context) (int, int, error) {
			run := rl.Drain
			if d == OursRunOnce {
				run = rl.RunOnce
			}
			st, err := run(ctx)
			r.stats.Failed += st.Failed
			r.stats.Skipped += st.Skipped
			r.stats.Expired += st.Expired
			r.stats.Deferred += st.Deferred
			r.stats.LostLease += st.LostLease
			return st.Claimed, st.Published, err
		}
	case SeedStyle:
		s := baseline.NewSeedStyle(pool, pub, e.Clock, opts)
		r.run = func(ctx context.Context) (int, int, error) {
			st, err := s.RunOnce(ctx)
			return st.Claimed, st.Published, err
		}
	case LockHolding:
		l := baseline.NewLockHolding(pool, pub, e.Clock, opts)
		r.run = func(ctx context.Context) (int, int, error) {
			st, err := l.RunOnce(ctx)
			return st.Claimed, st.Published, err
		}
	default:
		r.close()
		return nil, fmt.Errorf("unknown relay design %q", d)
	}
	return r, nil
}

// RelayCase is one relay measurement.
type RelayCase struct {
	ID       string
	Design   Design
	Replicas int
	Batch    int
	Rows     int // backlog size
}

// name describes c for the table.
func (c RelayCase) name() string {
	what := map[Design]string{
		Ours:        "system/relay Drain (next batch claimed while confirms are out)",
		OursRunOnce: "system/relay RunOnce loop (one batch at a time)",
		SeedStyle:   "seed-style: publish 1, wait confirm, mark 1",
		LockHolding: "lock-holding: FOR UPDATE tx over publish",
	}[c.Design]
	return fmt.Sprintf("%s, %d replica(s), batch %d", what, c.Replicas, c.Batch)
}

// MeasureRelay drains a fresh backlog of c.Rows PENDING rows with
// c.Replicas instances of c.Design running RunOnce back to back until a run
// claims nothing, and checks that every row is PUBLISHED and the queue holds
// exactly c.Rows messages. The latency of a message is the duration of the
// run that carried it (claim → marked).
func MeasureRelay(ctx context.Context, e *Env, c RelayCase) (res Result) {
	group := groupRelay
	if c.Design != Ours && c.Design != OursRunOnce {
		group = groupBaseline
	}
	res = Result{ID: c.ID, Group: group, Name: c.name(), Latency: "its batch: claim → marked"}
	if c.Design == Ours {
		res.Latency = "its batch: publish → confirmed (claim and mark overlap other batches)"
	}
	if c.Design == SeedStyle {
		res.Latency = "publish → confirm → mark"
	}
	if err := e.freshBacklog(ctx, c.Rows); err != nil {
		return res.fail(err)
	}
	cfg, err := e.Topology("relay")
	defer e.dropTopology(cfg.Prefix, &res)
	if err != nil {
		return res.fail(err)
	}
	cfg.BatchSize = c.Batch
	alerts := &countingAlerts{}
	ph := &Phases{}
	var lat Latencies
	var reps []*replica
	defer func() {
		for _, r := range reps {
			r.close()
		}
	}()
	for i := range c.Replicas {
		rc := cfg
		rc.Instance = fmt.Sprintf("bench-%s-%d", c.Design, i+1)
		r, err := newReplica(ctx, e, rc, c.Design, alerts, ph, &lat)
		if err != nil {
			return res.fail(err)
		}
		reps = append(reps, r)
	}
	// Per-message latency for the seed-style relay: it publishes one at a
	// time, so a run's duration divided by its rows is each row's time.
	perRow := c.Design == SeedStyle
	var published, batches, busy atomic.Int64
	var halfOnce sync.Once
	var half time.Duration
	errs := make([]error, len(reps))
	var wg sync.WaitGroup
	cpu0 := sampleCPU()
	start := time.Now()
	for i, r := range reps {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				t0 := time.Now()
				claimed, n, err := r.run(ctx)
				d := time.Since(t0)
				if published.Add(int64(n)) >= int64(c.Rows+1)/2 {
					halfOnce.Do(func() { half = time.Since(start) })
				}
				if err != nil {
					errs[i] = fmt.Errorf("replica %d: %w", i+1, err)
					return
				}
				if claimed == 0 {
					return
				}
				busy.Add(int64(d))
				switch {
				case c.Design == Ours:
					// Drain: one call carries many overlapping batches; the
					// publisher wrapper timed each batch's send → confirm.
					batches.Add(int64((claimed + c.Batch - 1) / c.Batch))
				case perRow:
					batches.Add(1)
					lat.Add(d/time.Duration(claimed), claimed)
				default:
					batches.Add(1)
					lat.Add(d, claimed)
				}
			}
			errs[i] = ctx.Err()
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	res.CPU, res.CPUOK = cpuSince(cpu0)
	if err := errors.Join(errs...); err != nil {
		return res.fail(err)
	}
	res.finish(int(published.Load()), elapsed, &lat)
	unit := "batch"
	if c.Design == SeedStyle {
		unit = fmt.Sprintf("batch of %d", c.Batch)
	}
	res.trace(ph, unit, int(batches.Load()), time.Duration(busy.Load()), "Go code and waits in between")
	var failed, other int
	for _, r := range reps {
		if r.stats != nil {
			failed += r.stats.Failed
			other += r.stats.Skipped + r.stats.Expired + r.stats.Deferred + r.stats.LostLease
		}
	}
	if failed+other > 0 || alerts.n.Load() > 0 {
		return res.fail(fmt.Errorf("%d failed, %d skipped/expired/deferred/lost, %d alerts in a clean drain", failed, other, alerts.n.Load()))
	}
	if err := e.verifyPublished(ctx, c.Rows); err != nil {
		return res.fail(err)
	}
	depth, err := e.QueueDepth(broker.NamesFor(cfg.Prefix).Main)
	if err != nil {
		return res.fail(err)
	}
	if depth != c.Rows {
		return res.fail(fmt.Errorf("queue holds %d messages for %d rows", depth, c.Rows))
	}
	res.Note = fmt.Sprintf("all %d rows PUBLISHED, queue holds %d", c.Rows, depth)
	if half > 0 && elapsed > half && c.Design != Ours {
		h := float64(c.Rows) / 2
		res.Note += fmt.Sprintf("; 1st half %.0f/s, 2nd half %.0f/s", h/half.Seconds(), h/(elapsed-half).Seconds())
	}
	return res
}

// freshBacklog empties the outbox and inserts rows 1..n, due now.
func (e *Env) freshBacklog(ctx context.Context, n int) error {
	if err := e.ResetOutbox(ctx); err != nil {
		return err
	}
	return e.Backlog(ctx, 1, int64(n), nil)
}

// verifyPublished checks every one of the n rows is PUBLISHED.
func (e *Env) verifyPublished(ctx context.Context, n int) error {
	got, err := e.CountStatus(ctx, history.OutboxPublished)
	if err != nil {
		return err
	}
	if got != n {
		return fmt.Errorf("%d of %d rows PUBLISHED", got, n)
	}
	return nil
}

// dropTopology deletes prefix's topology, recording a failure on res.
func (e *Env) dropTopology(prefix string, res *Result) {
	if prefix == "" {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := e.DropTopology(ctx, prefix); err != nil && res.Err == "" {
		res.Err = err.Error()
	}
}

// fail records err on r and returns r.
func (r Result) fail(err error) Result {
	if err != nil {
		r.Err = err.Error()
	}
	return r
}

// check is fail for a possibly nil error.
func (r Result) check(err error) Result { return r.fail(err) }
