package bench

import (
	"context"
	"fmt"
	"github.com/outboxchaos/outboxchaos/system/app"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/outboxchaos/outboxchaos/system/config"
	"github.com/outboxchaos/outboxchaos/system/publisher"
	"github.com/outboxchaos/outboxchaos/system/sms"
	"github.com/outboxchaos/outboxchaos/system/worker"
)

// Phases accumulates wall-clock time per phase of a measurement: each SQL
// statement kind (through a pgx tracer on the pool), the publish of a batch,
// the vendor call. It answers "where does a batch's time go" without
// touching system/ code. It is safe for concurrent use.
type Phases struct {
	mu    sync.Mutex
	total map[string]time.Duration
	count map[string]int
}

// Add records one occurrence of phase taking d.
func (p *Phases) Add(phase string, d time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.add(phase, d, 1)
}

func (p *Phases) add(phase string, d time.Duration, n int) {
	if p.total == nil {
		p.total, p.count = map[string]time.Duration{}, map[string]int{}
	}
	p.total[phase] += d
	p.count[phase] += n
}

// Phase is one line of a breakdown.
type Phase struct {
	Name    string
	PerUnit time.Duration // mean time per unit (batch or message)
	Calls   float64       // occurrences per unit
	Share   float64       // of the whole busy time
}

// Breakdown divides the accumulated phases by units (batches or messages)
// and adds a remainder line, busy minus the phases, named rest; busy is the
// summed busy time of every replica. Phases come out largest first.
func (p *Phases) Breakdown(units int, busy time.Duration, rest string) []Phase {
	p.mu.Lock()
	defer p.mu.Unlock()
	if units <= 0 || busy <= 0 {
		return nil
	}
	var out []Phase
	var sum time.Duration
	for name, d := range p.total {
		sum += d
		out = append(out, Phase{Name: name, PerUnit: d / time.Duration(units), Calls: float64(p.count[name]) / float64(units),
			Share: float64(d) / float64(busy)})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].PerUnit > out[j].PerUnit })
	if r := busy - sum; r > 0 {
		out = append(out, Phase{Name: rest, PerUnit: r / time.Duration(units), Share: float64(r) / float64(busy)})
	}
	return out
}

// FormatBreakdown renders phases on one line: "claim 4.1 ms (31%), …".
func FormatBreakdown(ph []Phase) string {
	parts := make([]string, len(ph))
	for i, x := range ph {
		calls := ""
		if x.Calls > 1.05 {
			calls = fmt.Sprintf(" ×%.0f", x.Calls)
		}
		parts[i] = fmt.Sprintf("%s%s %.2f ms (%.0f%%)", x.Name, calls, float64(x.PerUnit)/float64(time.Millisecond), 100*x.Share)
	}
	return strings.Join(parts, ", ")
}

// phaseOf names the phase of one SQL statement of the relay, the baselines
// or the worker, as the pipeline sends it or as pg_stat_statements shows it
// (its constants replaced by $n).
func phaseOf(sql string) string {
	s := strings.ToLower(sql)
	switch {
	case strings.TrimSpace(s) == "begin" || strings.HasPrefix(strings.TrimSpace(s), "begin "):
		return "sql begin"
	case strings.TrimSpace(s) == "commit":
		return "sql commit"
	case strings.Contains(s, "claimed_until < $1"):
		return "sql reclaim expired leases"
	case strings.Contains(s, "skip locked") && strings.HasPrefix(strings.TrimSpace(s), "with"):
		return "sql claim + consent lookup (one statement)"
	case strings.Contains(s, "skip locked") && strings.HasPrefix(strings.TrimSpace(s), "update"):
		return "sql claim (UPDATE … SKIP LOCKED)"
	case strings.Contains(s, "skip locked"):
		return "sql SELECT … FOR UPDATE SKIP LOCKED"
	case strings.Contains(s, "select status from notification_histories") && strings.Contains(s, "from members"):
		return "sql inbox peek + consent lookup (one statement)"
	case strings.Contains(s, "select status from notification_histories"):
		return "sql inbox peek"
	case strings.Contains(s, "from members"):
		return "sql consent lookup"
	case strings.Contains(s, "registered_numbers"):
		return "sql registered-number lookup"
	case (strings.Contains(s, "'published'") || strings.Contains(s, "published_at =")) && strings.Contains(s, "notification_outbox"):
		return "sql mark PUBLISHED"
	case strings.Contains(s, "exists (select 1 from notification_histories"):
		return "sql inbox peek"
	case strings.Contains(s, "insert into notification_histories"):
		return "sql inbox claim INSERT"
	case strings.Contains(s, "update notification_histories"):
		return "sql inbox result UPDATE"
	}
	return phaseOther
}

// phaseOther is the phase of a statement phaseOf does not name.
const phaseOther = "sql other"

type traceKey struct{}

type traceStart struct {
	at    time.Time
	phase string
}

// sqlTracer is a pgx.QueryTracer that adds each statement's time (until its
// rows are closed) to a Phases.
type sqlTracer struct{ p *Phases }

// TraceQueryStart notes the start and the phase.
func (t sqlTracer) TraceQueryStart(ctx context.Context, _ *pgx.Conn, d pgx.TraceQueryStartData) context.Context {
	return context.WithValue(ctx, traceKey{}, traceStart{time.Now(), phaseOf(d.SQL)})
}

// TraceQueryEnd records the statement.
func (t sqlTracer) TraceQueryEnd(ctx context.Context, _ *pgx.Conn, _ pgx.TraceQueryEndData) {
	if s, ok := ctx.Value(traceKey{}).(traceStart); ok {
		t.p.Add(s.phase, time.Since(s.at))
	}
}

// openTracedPool opens a pool as app.OpenPool does (app.PoolConfig), with
// every statement timed into p.
func openTracedPool(ctx context.Context, cfg config.Config, p *Phases) (*pgxpool.Pool, error) {
	pc, err := app.PoolConfig(cfg)
	if err != nil {
		return nil, err
	}
	pc.ConnConfig.Tracer = sqlTracer{p}
	pool, err := pgxpool.NewWithConfig(ctx, pc)
	if err != nil {
		return nil, fmt.Errorf("open Postgres pool: %w", err)
	}
	if err := pool.Ping(ctx); err != nil {
		pool.Close()
		return nil, fmt.Errorf("ping Postgres: %w", err)
	}
	return pool, nil
}

// timedPublisher times each PublishBatch (publish the batch, wait for every
// confirm).
type timedPublisher struct {
	inner *publisher.Publisher
	p     *Phases
	// Drain only: each batch's send → confirmed time, per message, and the
	// number of batches sent.
	lat  *Latencies
	sent *sync.Map // *publisher.Pending → sendStamp
}

type sendStamp struct {
	at time.Time
	n  int
}

// Send publishes a batch without waiting (Relay.Drain).
func (t timedPublisher) Send(ctx context.Context, msgs []publisher.Message) (*publisher.Pending, error) {
	start := time.Now()
	defer func() { t.p.Add("broker publish (send)", time.Since(start)) }()
	pd, err := t.inner.Send(ctx, msgs)
	if err == nil && t.sent != nil {
		t.sent.Store(pd, sendStamp{start, len(msgs)})
	}
	return pd, err
}

// Await waits for a sent batch's confirms (Relay.Drain).
func (t timedPublisher) Await(ctx context.Context, pd *publisher.Pending) []publisher.Result {
	start := time.Now()
	defer func() {
		t.p.Add("broker confirms (await)", time.Since(start))
		if v, ok := t.sent.LoadAndDelete(pd); ok && t.lat != nil {
			s := v.(sendStamp)
			t.lat.Add(time.Since(s.at), s.n)
		}
	}()
	return t.inner.Await(ctx, pd)
}

// PublishBatch publishes through the wrapped publisher.
func (t timedPublisher) PublishBatch(ctx context.Context, msgs []publisher.Message) ([]publisher.Result, error) {
	start := time.Now()
	defer func() { t.p.Add("broker publish + confirms", time.Since(start)) }()
	return t.inner.PublishBatch(ctx, msgs)
}

// timedVendor times each vendor call.
type timedVendor struct {
	inner worker.Vendor
	p     *Phases
}

// Send calls the wrapped vendor.
func (t timedVendor) Send(ctx context.Context, req sms.Request) sms.Result {
	start := time.Now()
	defer func() { t.p.Add("vendor HTTP call", time.Since(start)) }()
	return t.inner.Send(ctx, req)
}
