package bench

import (
	"context"
	"fmt"
	"io"
	"os"
	"regexp"
	"runtime"
	"sort"
	"strings"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/outboxchaos/outboxchaos/reports"
	"github.com/outboxchaos/outboxchaos/system/config"
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
	Rounds        int // interleaved rounds of the headline and worker stages
}

// DefaultSizes returns the sizes of `make bench` (full: a few minutes on a
// loaded 2-core machine) or `make bench-quick` (quick: well under a minute;
// its memory measurement uses a 100,000-row backlog instead of 1,000,000).
// n, if positive, overrides RelayRows, and the raw publish and relay SQL
// sizes follow it.
func DefaultSizes(quick bool, n int) Sizes {
	s := Sizes{
		RelayRows: 30_000, LargeBatch: 500, SeedRows: 2_000,
		PublishEach: 1_000, PublishWindow: 30_000, SQLRows: 30_000,
		InboxMsgs: 1_500, ConsumeMsgs: 5_000, Worker0: 2_000, Worker20: 300,
		MemBacklog: 1_000_000, MemDrain: 30_000, Rounds: 3,
	}
	if quick {
		s = Sizes{
			RelayRows: 4_000, LargeBatch: 500, SeedRows: 300,
			PublishEach: 200, PublishWindow: 4_000, SQLRows: 4_000,
			InboxMsgs: 300, ConsumeMsgs: 1_000, Worker0: 300, Worker20: 50,
			MemBacklog: 100_000, MemDrain: 4_000, Rounds: 2,
		}
	}
	if n > 0 {
		s.RelayRows, s.PublishWindow, s.SQLRows = n, n, n
		s.SeedRows = min(s.SeedRows, n)
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
	// Env, if set, is used instead of a new sandbox (and not closed).
	Env *Env
}

// step is one measurement of the suite. run gets the round (0-based) and
// the number of rounds, and measures its share of the work.
type step struct {
	id, what string
	run      func(ctx context.Context, e *Env, round, rounds int) Result
}

// stage is a group of steps run in interleaved rounds: round r runs every
// step once, in an order rotated by r, on 1/rounds of its size; each step's
// rounds are then merged. Interleaving keeps the ratios between the steps of
// a stage honest when the shared machine's load drifts during the run.
type stage struct {
	rounds int
	steps  []step
}

// share is n split over rounds, at least least.
func share(n, rounds, least int) int { return max(n/max(rounds, 1), least) }

// Run performs every measurement in one sandbox and returns the report. It
// fails only when the sandbox cannot be set up or ctx ends; a failing
// measurement is recorded in its row (Result.Err) and the others still run.
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
	rep := &Report{Started: time.Now(), Commit: reports.Commit(), Quick: o.Quick, Sizes: s, Cores: runtime.NumCPU(), GoVersion: runtime.Version(), LoadBefore: loadAvg()}
	e := o.Env
	if e == nil {
		say("setting up a sandbox schema and queue prefix")
		var err error
		if e, err = NewEnv(ctx, o.PGURL, o.AMQPURL); err != nil {
			return nil, err
		}
		defer func() {
			if err := e.Close(); err != nil {
				say("cleanup: %v", err)
			}
		}()
	}
	rep.PGVersion, rep.RabbitVersion = versions(ctx, e)
	stmts := openStmtStats(ctx, e.Pool)
	rep.StmtsWhy = stmts.why
	say("schema %s; %d cores, %s, PostgreSQL %s, RabbitMQ %s", e.Schema, rep.Cores, rep.GoVersion, rep.PGVersion, rep.RabbitVersion)

	relayCase := func(id string, d Design, replicas, batch, rows int) step {
		c := RelayCase{ID: id, Design: d, Replicas: replicas, Batch: batch, Rows: rows}
		return step{id, fmt.Sprintf("%s (%d rows)", c.name(), rows), func(ctx context.Context, e *Env, round, rounds int) Result {
			c := c
			c.Rows = share(rows, rounds, 1)
			return MeasureRelay(ctx, e, c)
		}}
	}
	large := s.LargeBatch
	rounds := max(s.Rounds, 1)
	drainWindow := DrainWindow()
	plan := []stage{
		{1, []step{
			{IDRawPublishEach, fmt.Sprintf("raw publish, wait for each confirm (%d msgs)", s.PublishEach),
				func(ctx context.Context, e *Env, _, _ int) Result {
					return RawPublish(ctx, e, IDRawPublishEach, s.PublishEach, 1)
				}},
		}},
		// The headline ratios: the raw limits, our relay and both
		// baselines, interleaved.
		{rounds, []step{
			{IDRawRelaySQL, fmt.Sprintf("relay SQL alone, batch 50 (%d rows)", s.SQLRows),
				func(ctx context.Context, e *Env, _, rounds int) Result {
					return RawRelaySQL(ctx, e, IDRawRelaySQL, share(s.SQLRows, rounds, 100), 50)
				}},
			{IDRawPublishWindow, fmt.Sprintf("raw publish, 50 in flight (%d msgs)", s.PublishWindow),
				func(ctx context.Context, e *Env, _, rounds int) Result {
					return RawPublish(ctx, e, IDRawPublishWindow, share(s.PublishWindow, rounds, 100), 50)
				}},
			{IDRawPublishDrainWindow, fmt.Sprintf("raw publish, %d in flight (%d msgs)", drainWindow, s.PublishWindow),
				func(ctx context.Context, e *Env, _, rounds int) Result {
					return RawPublish(ctx, e, IDRawPublishDrainWindow, share(s.PublishWindow, rounds, 100), drainWindow)
				}},
			relayCase(IDRelay, Ours, 1, 50, s.RelayRows),
			relayCase(IDLockHolding, LockHolding, 1, 50, s.RelayRows),
			relayCase(IDSeedStyle, SeedStyle, 1, 50, s.SeedRows),
		}},
		{1, []step{
			relayCase(IDRelayRunOnce, OursRunOnce, 1, 50, s.RelayRows),
			relayCase("relay.r2.b50", Ours, 2, 50, s.RelayRows),
			relayCase(fmt.Sprintf("relay.r1.b%d", large), Ours, 1, large, s.RelayRows),
			relayCase(fmt.Sprintf("relay.r2.b%d", large), Ours, 2, large, s.RelayRows),
			relayCase("baseline.lockholding.r2.b50", LockHolding, 2, 50, s.RelayRows),
		}},
		// The worker and its raw limits, interleaved.
		{rounds, []step{
			{IDRawConsume, fmt.Sprintf("raw consume + ack, prefetch 1 (%d msgs)", s.ConsumeMsgs),
				func(ctx context.Context, e *Env, _, rounds int) Result {
					return RawConsume(ctx, e, IDRawConsume, share(s.ConsumeMsgs, rounds, 10))
				}},
			{IDRawInboxSQL, fmt.Sprintf("inbox SQL alone (%d msgs)", s.InboxMsgs),
				func(ctx context.Context, e *Env, _, rounds int) Result {
					return RawInboxSQL(ctx, e, IDRawInboxSQL, share(s.InboxMsgs, rounds, 5))
				}},
			{IDWorker0, fmt.Sprintf("system/worker, vendor 0 ms (%d msgs)", s.Worker0),
				func(ctx context.Context, e *Env, _, rounds int) Result {
					return MeasureWorker(ctx, e, IDWorker0, share(s.Worker0, rounds, 5), 0)
				}},
		}},
		{1, []step{
			{IDWorker20, fmt.Sprintf("system/worker, vendor 20 ms (%d msgs)", s.Worker20),
				func(ctx context.Context, e *Env, _, _ int) Result {
					return MeasureWorker(ctx, e, IDWorker20, s.Worker20, 20*time.Millisecond)
				}},
		}},
	}
	total := 0
	for i := range plan {
		var keep []step
		for _, st := range plan[i].steps {
			if o.Only == nil || o.Only.MatchString(st.id) {
				keep = append(keep, st)
			}
		}
		plan[i].steps = keep
		total += len(keep) * plan[i].rounds
	}
	withMemory := o.Only == nil || o.Only.MatchString(IDMemory)
	if withMemory {
		total++
	}
	k := 0
	for _, sg := range plan {
		byID := map[string][]Result{}
		for round := range sg.rounds {
			for j := range sg.steps {
				st := sg.steps[(j+round)%len(sg.steps)]
				if err := ctx.Err(); err != nil {
					return rep, err
				}
				k++
				tag := st.id
				if sg.rounds > 1 {
					tag = fmt.Sprintf("%s [round %d/%d]", st.id, round+1, sg.rounds)
				}
				say("(%d/%d) start %s: %s", k, total, tag, st.what)
				t0 := time.Now()
				before, err := stmts.sample(ctx)
				if err != nil {
					stmts.view, stmts.why = "", err.Error()
				}
				r := st.run(ctx, e, round, sg.rounds)
				r.Statements = stmts.since(ctx, before)
				rep.StmtsWhy = stmts.why
				byID[st.id] = append(byID[st.id], r)
				if r.Err != "" {
					say("(%d/%d) FAIL  %s after %.1fs: %s", k, total, tag, time.Since(t0).Seconds(), r.Err)
					continue
				}
				say("(%d/%d) done  %s: %s in %.1fs", k, total, tag, r.summary(), time.Since(t0).Seconds())
			}
		}
		for _, st := range sg.steps {
			m := mergeRounds(byID[st.id])
			if sg.rounds > 1 && m.Err == "" {
				say("      %s over %d rounds: %s", st.id, sg.rounds, m.summary())
			}
			rep.Results = append(rep.Results, m)
		}
	}
	sort.SliceStable(rep.Results, func(i, j int) bool { return displayRank(rep.Results[i].ID) < displayRank(rep.Results[j].ID) })
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
	rep.Finish()
	return rep, nil
}

// Finish stamps the run's end: its duration from the start and the load
// average now. Run calls it; a caller that measures more afterwards (the
// appendix's explore, peer and audit sections) calls it again, so the page
// says how long the whole run took.
func (r *Report) Finish() {
	r.Duration = time.Since(r.Started)
	r.LoadAfter = loadAvg()
}

// displayRank orders the table: raw limits, our relay, the baselines, the
// worker.
func displayRank(id string) int {
	for i, p := range []string{IDRawPublishEach, IDRawPublishWindow, IDRawPublishDrainWindow, IDRawRelaySQL, IDRawInboxSQL, IDRawConsume,
		IDRelay, IDRelayRunOnce, "relay.r2.b50", "relay.r1.", "relay.r2.", IDLockHolding, "baseline.lockholding.", IDSeedStyle, "worker."} {
		if strings.HasPrefix(id, p) {
			return i
		}
	}
	return 100
}

// Measurement IDs the key lines are computed from.
const (
	IDRawPublishEach   = "raw.publish.each"
	IDRawPublishWindow = "raw.publish.window50"
	// IDRawPublishDrainWindow is raw publish with as many messages in
	// flight as a draining relay may have (DrainWindow).
	IDRawPublishDrainWindow = "raw.publish.drainwindow"
	IDRawRelaySQL           = "raw.sql.relay.b50"
	IDRawInboxSQL           = "raw.sql.inbox"
	IDRawConsume            = "raw.consume.prefetch1"
	IDRelay                 = "relay.r1.b50"
	IDRelayRunOnce          = "runonce.r1.b50"
	IDLockHolding           = "baseline.lockholding.r1.b50"
	IDSeedStyle             = "baseline.seedstyle.r1.b50"
	IDWorker0               = "worker.vendor0ms"
	IDWorker20              = "worker.vendor20ms"
	IDMemory                = "memory.relay.1m"
)

// versions asks the services for their versions.
func versions(ctx context.Context, e *Env) (pg, rabbit string) {
	pg, rabbit = "unknown", "unknown"
	var v string
	if err := e.Pool.QueryRow(ctx, `SHOW server_version`).Scan(&v); err == nil {
		pg = v
	}
	conn, err := amqp.DialConfig(e.Cfg.AMQPURL, amqp.Config{Dial: amqp.DefaultDial(5 * time.Second)})
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

// DrainWindow is how many publishes a draining relay (relay.r1.b50) may
// have unconfirmed at once: batch 50 × the default relay-drain-depth.
func DrainWindow() int { return 50 * config.Default().RelayDrainDepth }
