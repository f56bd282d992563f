package bench

import (
	"context"
	"fmt"
	"io"
	"os"
	"regexp"
	"runtime"
	"strings"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"
)

// Sizes are the workload sizes of one run.
type Sizes struct {
	RelayRows     int // backlog per system/relay and lock-holding measurement (-n)
	LargeBatch    int // the larger relay batch size, beside the spec's 50
	SeedRows      int // backlog for the seed-style relay (it is slow)
	PublishEach   int // raw publish, waiting for each confirm
	PublishWindow int // raw publish, 50 in flight
	SQLRows       int // relay SQL alone
	InboxMsgs     int // inbox SQL alone
	ConsumeMsgs   int // raw consume + ack
	Worker0       int // worker messages at 0 ms vendor latency
	Worker20      int // worker messages at 20 ms vendor latency
	MemBacklog    int // PENDING rows for the memory measurement and EXPLAIN
	MemDrain      int // rows the relay child publishes from that backlog
}

// DefaultSizes returns the sizes of `make bench` (full) or `make
// bench-quick` (quick). n, if positive, overrides RelayRows; the other
// relay-side sizes follow it.
func DefaultSizes(quick bool, n int) Sizes {
	s := Sizes{
		RelayRows: 100_000, LargeBatch: 500, SeedRows: 5_000,
		PublishEach: 2_000, PublishWindow: 100_000, SQLRows: 100_000,
		InboxMsgs: 3_000, ConsumeMsgs: 20_000, Worker0: 5_000, Worker20: 400,
		MemBacklog: 1_000_000, MemDrain: 100_000,
	}
	if quick {
		s = Sizes{
			RelayRows: 5_000, LargeBatch: 500, SeedRows: 500,
			PublishEach: 300, PublishWindow: 5_000, SQLRows: 5_000,
			InboxMsgs: 300, ConsumeMsgs: 2_000, Worker0: 500, Worker20: 60,
			MemBacklog: 1_000_000, MemDrain: 5_000,
		}
	}
	if n > 0 {
		s.RelayRows, s.PublishWindow, s.SQLRows = n, n, n
		s.SeedRows = min(s.SeedRows, n)
		s.MemDrain = min(s.MemDrain, s.MemBacklog)
	}
	return s
}

// Options configure Run.
type Options struct {
	PGURL, AMQPURL string
	Quick          bool
	Sizes          Sizes
	// Only, if set, runs just the measurements whose ID matches (the key
	// lines that need a skipped one print n/a).
	Only *regexp.Regexp
	// Progress gets a line as each measurement starts and ends.
	Progress io.Writer
}

// step is one measurement of the suite.
type step struct {
	id, what string
	run      func(ctx context.Context, e *Env) Result
}

// Run performs every measurement in one sandbox and returns the report. It
// fails only when the sandbox cannot be set up; a failing measurement is
// recorded in its row (Result.Err) and the others still run.
func Run(ctx context.Context, o Options) (*Report, error) {
	if bug := os.Getenv("OUTBOXCHAOS_BUG"); bug != "" {
		return nil, fmt.Errorf("OUTBOXCHAOS_BUG=%s enables a deliberately broken pipeline: unset it to benchmark", bug)
	}
	prog := o.Progress
	if prog == nil {
		prog = io.Discard
	}
	say := func(format string, args ...any) { fmt.Fprintf(prog, "[bench] "+format+"\n", args...) }
	s := o.Sizes
	rep := &Report{Started: time.Now(), Quick: o.Quick, Sizes: s, Cores: runtime.NumCPU(), GoVersion: runtime.Version(), LoadBefore: loadAvg()}
	say("setting up a sandbox schema and queue prefix")
	e, err := NewEnv(ctx, o.PGURL, o.AMQPURL)
	if err != nil {
		return nil, err
	}
	defer func() {
		if err := e.Close(); err != nil {
			say("cleanup: %v", err)
		}
	}()
	rep.PGVersion, rep.RabbitVersion = versions(ctx, e)
	say("sandbox %s; %d cores, %s, PostgreSQL %s, RabbitMQ %s", e.SB.Schema, rep.Cores, rep.GoVersion, rep.PGVersion, rep.RabbitVersion)

	relayCase := func(id string, d Design, replicas, batch, rows int) step {
		c := RelayCase{ID: id, Design: d, Replicas: replicas, Batch: batch, Rows: rows}
		return step{id, fmt.Sprintf("%s (%d rows)", c.name(), rows), func(ctx context.Context, e *Env) Result { return MeasureRelay(ctx, e, c) }}
	}
	steps := []step{
		{IDRawPublishEach, fmt.Sprintf("raw publish, wait for each confirm (%d msgs)", s.PublishEach),
			func(ctx context.Context, e *Env) Result { return RawPublish(ctx, e, IDRawPublishEach, s.PublishEach, 1) }},
		{IDRawPublishWindow, fmt.Sprintf("raw publish, 50 in flight (%d msgs)", s.PublishWindow),
			func(ctx context.Context, e *Env) Result { return RawPublish(ctx, e, IDRawPublishWindow, s.PublishWindow, 50) }},
		{IDRawRelaySQL, fmt.Sprintf("relay SQL alone, batch 50 (%d rows)", s.SQLRows),
			func(ctx context.Context, e *Env) Result { return RawRelaySQL(ctx, e, IDRawRelaySQL, s.SQLRows, 50) }},
		{IDRawInboxSQL, fmt.Sprintf("inbox SQL alone (%d msgs)", s.InboxMsgs),
			func(ctx context.Context, e *Env) Result { return RawInboxSQL(ctx, e, IDRawInboxSQL, s.InboxMsgs) }},
		{IDRawConsume, fmt.Sprintf("raw consume + ack, prefetch 1 (%d msgs)", s.ConsumeMsgs),
			func(ctx context.Context, e *Env) Result { return RawConsume(ctx, e, IDRawConsume, s.ConsumeMsgs) }},
		relayCase(IDRelay, Ours, 1, 50, s.RelayRows),
		relayCase("relay.r2.b50", Ours, 2, 50, s.RelayRows),
		relayCase(fmt.Sprintf("relay.r1.b%d", s.LargeBatch), Ours, 1, s.LargeBatch, s.RelayRows),
		relayCase(fmt.Sprintf("relay.r2.b%d", s.LargeBatch), Ours, 2, s.LargeBatch, s.RelayRows),
		relayCase(IDLockHolding, LockHolding, 1, 50, s.RelayRows),
		relayCase("baseline.lockholding.r2.b50", LockHolding, 2, 50, s.RelayRows),
		relayCase(IDSeedStyle, SeedStyle, 1, 50, s.SeedRows),
		{IDRawPublishWindowAfter, fmt.Sprintf("raw publish, 50 in flight, again after the relays (%d msgs)", s.PublishWindow),
			func(ctx context.Context, e *Env) Result {
				return RawPublish(ctx, e, IDRawPublishWindowAfter, s.PublishWindow, 50)
			}},
		{IDWorker0, fmt.Sprintf("system/worker, vendor 0 ms (%d msgs)", s.Worker0),
			func(ctx context.Context, e *Env) Result { return MeasureWorker(ctx, e, IDWorker0, s.Worker0, 0) }},
		{"worker.vendor20ms", fmt.Sprintf("system/worker, vendor 20 ms (%d msgs)", s.Worker20),
			func(ctx context.Context, e *Env) Result {
				return MeasureWorker(ctx, e, "worker.vendor20ms", s.Worker20, 20*time.Millisecond)
			}},
	}
	var todo []step
	for _, st := range steps {
		if o.Only == nil || o.Only.MatchString(st.id) {
			todo = append(todo, st)
		}
	}
	withMemory := o.Only == nil || o.Only.MatchString(IDMemory)
	total := len(todo)
	if withMemory {
		total++
	}
	for i, st := range todo {
		if err := ctx.Err(); err != nil {
			return rep, err
		}
		say("(%d/%d) start %s: %s", i+1, total, st.id, st.what)
		t0 := time.Now()
		r := st.run(ctx, e)
		rep.Results = append(rep.Results, r)
		if r.Err != "" {
			say("(%d/%d) FAIL  %s after %.1fs: %s", i+1, total, st.id, time.Since(t0).Seconds(), r.Err)
			continue
		}
		say("(%d/%d) done  %s: %s in %.1fs", i+1, total, st.id, r.summary(), time.Since(t0).Seconds())
	}
	if withMemory {
		if err := ctx.Err(); err != nil {
			return rep, err
		}
		say("(%d/%d) start %s: relay peak RSS with a %d-row backlog, EXPLAIN of the claim", total, total, IDMemory, s.MemBacklog)
		t0 := time.Now()
		m := MeasureMemory(ctx, e, s.MemBacklog, s.MemDrain, func(line string) { say("      %s", line) })
		rep.Memory = &m
		if m.Err != "" {
			say("(%d/%d) FAIL  %s after %.1fs: %s", total, total, IDMemory, time.Since(t0).Seconds(), m.Err)
		} else {
			say("(%d/%d) done  %s: peak RSS %.1f MB draining %d rows, claim uses index: %v, in %.1fs",
				total, total, IDMemory, m.PeakRSSMB, m.Drained, m.UsesIndex, time.Since(t0).Seconds())
		}
	}
	rep.Duration = time.Since(rep.Started)
	rep.LoadAfter = loadAvg()
	return rep, nil
}

// Measurement IDs the key lines are computed from.
const (
	IDRawPublishEach        = "raw.publish.each"
	IDRawPublishWindow      = "raw.publish.window50"
	IDRawPublishWindowAfter = "raw.publish.window50.after"
	IDRawRelaySQL           = "raw.sql.relay.b50"
	IDRawInboxSQL           = "raw.sql.inbox"
	IDRawConsume            = "raw.consume.prefetch1"
	IDRelay                 = "relay.r1.b50"
	IDLockHolding           = "baseline.lockholding.r1.b50"
	IDSeedStyle             = "baseline.seedstyle.r1.b50"
	IDWorker0               = "worker.vendor0ms"
	IDMemory                = "memory.relay.1m"
)

// versions asks the services for their versions.
func versions(ctx context.Context, e *Env) (pg, rabbit string) {
	pg, rabbit = "unknown", "unknown"
	var v string
	if err := e.Pool.QueryRow(ctx, `SHOW server_version`).Scan(&v); err == nil {
		pg = v
	}
	conn, err := amqp.DialConfig(e.SB.AMQPURL, amqp.Config{Dial: amqp.DefaultDial(5 * time.Second)})
	if err == nil {
		if s, ok := conn.Properties["version"].(string); ok {
			rabbit = s
		}
		_ = conn.Close()
	}
	return pg, rabbit
}

// loadAvg returns the 1-, 5- and 15-minute load averages, or "".
func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return ""
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return ""
	}
	return strings.Join(f[:3], " ")
}

// summary is the one-line outcome for progress output.
func (r Result) summary() string {
	s := fmt.Sprintf("%.0f msgs/s", r.Rate)
	if r.P50 > 0 {
		s += fmt.Sprintf(", p50 %s, p99 %s", ms(r.P50), ms(r.P99))
	}
	return s
}

func ms(d time.Duration) string { return fmt.Sprintf("%.2f ms", float64(d)/float64(time.Millisecond)) }
