package bench

import (
	"fmt"
	"math"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/outboxchaos/outboxchaos/reports"
)

// Report is the outcome of one Run.
type Report struct {
	Started time.Time
	// Commit is the commit the measured code was built from.
	Commit        string
	Duration      time.Duration
	Quick         bool
	Sizes         Sizes
	Cores         int
	GoVersion     string
	PGVersion     string
	RabbitVersion string
	LoadBefore    string // /proc/loadavg at the start
	LoadAfter     string // ... and at the end
	Results       []Result
	// StmtsWhy says why the statements' split was not measured ("": it
	// was, see Result.Statements).
	StmtsWhy string
	Memory   *MemoryResult
	// Peers are the peer relays' rates, PeerRows rows each (outboxbench
	// -peers); nil: not measured.
	Peers    []PeerRate
	PeerRows int
	// Explore is what random schedules cost run one at a time
	// (outboxbench -explore); nil: not measured.
	Explore *ExploreCost
	// Audit is what the audit costs on a generated month (outboxbench
	// -audit); nil: not measured.
	Audit *AuditCost
	// Before is an earlier build's page of the same sitting (outboxbench
	// -before); nil: none.
	Before *Before
}

// Result returns the measurement with id, if it ran and succeeded.
func (r *Report) Result(id string) (Result, bool) {
	for _, x := range r.Results {
		if x.ID == id && x.Err == "" {
			return x, true
		}
	}
	return Result{}, false
}

func (r *Report) rate(id string) float64 {
	if x, ok := r.Result(id); ok && x.Rate > 0 {
		return x.Rate
	}
	return math.NaN()
}

// Failed reports whether any measurement failed.
func (r *Report) Failed() bool {
	for _, x := range r.Results {
		if x.Err != "" {
			return true
		}
	}
	return r.Memory != nil && r.Memory.Err != ""
}

// Figures are the headline numbers, NaN when the measurement did not run.
type Figures struct {
	Relay, RawWindow50, Seed, LockHolding, Worker0 float64
	RelayVsRaw, RelayVsSeed, RelayVsLock           float64
	// RawDrainWindow is raw publish with the draining relay's in-flight
	// bound; RelayVsRawDrain the relay's rate over it.
	RawDrainWindow, RelayVsRawDrain float64
	// RelayCPU and RawCPU are µs of CPU per message (machine-wide) of
	// relay.r1.b50 and raw.publish.window50; RawVsRelayCPU is RawCPU ÷
	// RelayCPU, the ratio a fully loaded machine would show.
	RelayCPU, RawCPU, RawVsRelayCPU float64
	// RawSQLCPU is µs of CPU per message of raw.sql.relay.b50 (the
	// relay's claim and mark alone); RelayLimitCPU = RawCPU + RawSQLCPU is
	// the relay's limit, the work it cannot avoid, and RelayVsLimitCPU =
	// RelayLimitCPU ÷ RelayCPU how close it runs to it.
	RawSQLCPU, RelayLimitCPU, RelayVsLimitCPU float64
	WorkerLimit, WorkerVsLimit                float64 // serial raw consume + inbox SQL
	PeakRSSMB                                 float64
	UsesIndex                                 *bool
}

// Figures computes the headline numbers.
func (r *Report) Figures() Figures {
	f := Figures{
		Relay: r.rate(IDRelay), Seed: r.rate(IDSeedStyle), LockHolding: r.rate(IDLockHolding), Worker0: r.rate(IDWorker0),
		PeakRSSMB: math.NaN(),
	}
	f.RawWindow50 = r.rate(IDRawPublishWindow)
	f.RelayVsRaw = f.Relay / f.RawWindow50
	f.RelayVsSeed = f.Relay / f.Seed
	f.RelayVsLock = f.Relay / f.LockHolding
	f.RawDrainWindow = r.rate(IDRawPublishDrainWindow)
	f.RelayVsRawDrain = f.Relay / f.RawDrainWindow
	f.RelayCPU, f.RawCPU = r.cpuPerMsg(IDRelay), r.cpuPerMsg(IDRawPublishWindow)
	f.RawVsRelayCPU = f.RawCPU / f.RelayCPU
	f.RawSQLCPU = r.cpuPerMsg(IDRawRelaySQL)
	l := limitsOf(r.rate, r.cpuPerMsg)
	f.RelayLimitCPU, f.RelayVsLimitCPU = l.RelayCPU, l.RelayVsLimit
	f.WorkerLimit, f.WorkerVsLimit = l.Worker, l.WorkerVsLimit
	if m := r.Memory; m != nil && m.Err == "" {
		f.PeakRSSMB = m.PeakRSSMB
	}
	if m := r.Memory; m != nil && m.PlanCustom != "" {
		v := m.UsesIndex
		f.UsesIndex = &v
	}
	return f
}

// limits are the relay's and the worker's limits and how close each runs
// to its own, computed from a page's rates (msgs/s) and CPU per message
// (µs) by measurement ID, NaN where one was not measured: this run's page
// and an earlier build's read back compute them alike.
type limits struct {
	// RelayCPU is the relay's limit, the work it cannot avoid: the raw
	// publish with 50 in flight plus the raw claim and mark of batch 50, in
	// CPU per message; RelayVsLimit is that over the relay's own.
	RelayCPU, RelayVsLimit float64
	// Worker is the worker's serial limit, raw consume and the raw inbox
	// statements one after the other, in msgs/s; WorkerVsLimit is the
	// worker's rate at 0 ms vendor latency over it.
	Worker, WorkerVsLimit float64
}

func limitsOf(rate, cpu func(id string) float64) limits {
	var l limits
	l.RelayCPU = cpu(IDRawPublishWindow) + cpu(IDRawRelaySQL)
	l.RelayVsLimit = l.RelayCPU / cpu(IDRelay)
	l.Worker = 1 / (1/rate(IDRawConsume) + 1/rate(IDRawInboxSQL))
	l.WorkerVsLimit = rate(IDWorker0) / l.Worker
	return l
}

func num(v float64, format string) string {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return "n/a"
	}
	return fmt.Sprintf(format, v)
}

// KeyLines returns the machine-readable lines, exactly these keys in this
// order; a value that could not be measured is n/a.
func (r *Report) KeyLines() []string {
	f := r.Figures()
	idx := "n/a"
	if f.UsesIndex != nil {
		idx = fmt.Sprint(*f.UsesIndex)
	}
	return []string{
		"relay_msgs_per_s=" + num(f.Relay, "%.0f"),
		"raw_confirm_window50_msgs_per_s=" + num(f.RawWindow50, "%.0f"),
		"relay_vs_raw_ratio=" + num(f.RelayVsRaw, "%.2f"),
		"relay_vs_seed_style_ratio=" + num(f.RelayVsSeed, "%.2f"),
		"relay_vs_lock_holding_ratio=" + num(f.RelayVsLock, "%.2f"),
		"relay_vs_limit_cpu_ratio=" + num(f.RelayVsLimitCPU, "%.2f"),
		"worker_msgs_per_s_vendor0ms=" + num(f.Worker0, "%.0f"),
		"worker_vs_limit_ratio=" + num(f.WorkerVsLimit, "%.2f"),
		"relay_peak_rss_mb_1m_backlog=" + num(f.PeakRSSMB, "%.1f"),
		"claim_query_uses_index=" + idx,
	}
}

// Target is one goal of the issue and whether this run met it.
type Target struct {
	What, Goal, Value string
	Met               *bool // nil: not measured
}

// Targets checks the run against the benchmark's goals. They are goals
// for the report, never assertions in tests.
func (r *Report) Targets() []Target {
	f := r.Figures()
	check := func(v float64, ok func(float64) bool) *bool {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return nil
		}
		b := ok(v)
		return &b
	}
	idx := Target{What: fmt.Sprintf("claim query uses an index at a %d-row backlog", r.Sizes.MemBacklog), Goal: "true", Value: "n/a"}
	if f.UsesIndex != nil {
		idx.Value, idx.Met = fmt.Sprint(*f.UsesIndex), f.UsesIndex
	}
	return []Target{
		{fmt.Sprintf("relay's limit vs the relay by CPU per message: raw publish with 50 in flight + raw claim and mark of batch 50 (%s + %s µs) ÷ the relay (%s µs, at %s msgs/s)",
			num(f.RawCPU, "%.0f"), num(f.RawSQLCPU, "%.0f"), num(f.RelayCPU, "%.0f"), num(f.Relay, "%.0f")),
			"≥ 0.90", num(f.RelayVsLimitCPU, "%.2f"), check(f.RelayVsLimitCPU, func(v float64) bool { return v >= 0.9 })},
		{"relay vs lock-holding relay (ahead of it, without holding locks over the publish)", "> 1", num(f.RelayVsLock, "%.2f"), check(f.RelayVsLock, func(v float64) bool { return v > 1 })},
		{"relay vs seed-style relay", "≥ 5", num(f.RelayVsSeed, "%.2f"), check(f.RelayVsSeed, func(v float64) bool { return v >= 5 })},
		{fmt.Sprintf("relay peak RSS, %d-row backlog", r.Sizes.MemBacklog), "< 100 MB", num(f.PeakRSSMB, "%.1f MB"), check(f.PeakRSSMB, func(v float64) bool { return v < 100 })},
		idx,
		{fmt.Sprintf("worker (0 ms vendor) vs raw consume+inbox SQL limit (%s msgs/s)", num(f.WorkerLimit, "%.0f")), "≥ 0.50 (within ×2)",
			num(f.WorkerVsLimit, "%.2f"), check(f.WorkerVsLimit, func(v float64) bool { return v >= 0.5 })},
	}
}

func metString(m *bool) string {
	switch {
	case m == nil:
		return "not measured"
	case *m:
		return "met"
	default:
		return "MISSED"
	}
}

func latCell(d time.Duration) string {
	if d <= 0 {
		return "–"
	}
	return fmt.Sprintf("%.2f", float64(d)/float64(time.Millisecond))
}

func (r *Report) mode() string {
	if r.Quick {
		return "quick: make bench-quick"
	}
	return "full: make bench"
}

// Text renders the table, the memory figures, the targets and the key lines
// for a terminal.
func (r *Report) Text() string {
	var b strings.Builder
	fmt.Fprintf(&b, "outbox benchmark, %s, %s\n", r.mode(), r.Started.Format(time.RFC3339))
	fmt.Fprintf(&b, "machine: %d cores, %s, PostgreSQL %s, RabbitMQ %s, load %s → %s, run took %s\n\n",
		r.Cores, r.GoVersion, r.PGVersion, r.RabbitVersion, r.LoadBefore, r.LoadAfter, r.Duration.Round(time.Second))
	tw := tabwriter.NewWriter(&b, 2, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "msgs/s\tp50 ms\tp99 ms\tmsgs\t\tmeasurement")
	group := ""
	for _, x := range r.Results {
		if x.Group != group {
			group = x.Group
			fmt.Fprintf(tw, "\t\t\t\t\t%s\n", "— "+group)
		}
		if x.Err != "" {
			fmt.Fprintf(tw, "FAILED\t\t\t\t\t%s [%s]: %s\n", x.Name, x.ID, x.Err)
			continue
		}
		fmt.Fprintf(tw, "%.0f\t%s\t%s\t%d\t\t%s [%s]\n", x.Rate, latCell(x.P50), latCell(x.P99), x.Msgs, x.Name, x.ID)
	}
	_ = tw.Flush()
	if lines := r.breakdownLines(); len(lines) > 0 {
		fmt.Fprintln(&b, "\nwhere the busy time goes (mean per batch or message):")
		for _, l := range lines {
			fmt.Fprintf(&b, "  %s\n", l)
		}
	}
	if lines := r.cpuLines(); len(lines) > 0 {
		fmt.Fprintln(&b, "\nCPU per message, machine-wide, during the timed part:")
		for _, l := range lines {
			fmt.Fprintf(&b, "  %s\n", l)
		}
	}
	if lines := r.stmtLines(); len(lines) > 0 {
		fmt.Fprintln(&b, "\nthe database's statements per message (pg_stat_statements):")
		for _, l := range lines {
			fmt.Fprintf(&b, "  %s\n", l)
		}
	}
	if m := r.Memory; m != nil {
		fmt.Fprintln(&b)
		if m.Err != "" {
			fmt.Fprintf(&b, "memory: FAILED: %s\n", m.Err)
		}
		if m.Drained > 0 {
			fmt.Fprintf(&b, "memory: relay child peak RSS %.1f MB (heap in use peak %.1f MB) while publishing %d of %d PENDING rows in %.1fs (%.0f rows/s)\n",
				m.PeakRSSMB, m.HeapPeakMB, m.Drained, m.Backlog, m.DrainTime.Seconds(), float64(m.Drained)/m.DrainTime.Seconds())
		}
		if m.PlanCustom != "" {
			fmt.Fprintf(&b, "claim query at %d rows: %s\n", m.Backlog, m.IndexVerdict)
		}
	}
	f := r.Figures()
	fmt.Fprintln(&b, "\ntargets:")
	for _, t := range r.Targets() {
		fmt.Fprintf(&b, "  %-12s %-70s %s (goal %s)\n", metString(t.Met), t.What, t.Value, t.Goal)
	}
	if id, rate := r.bestRelay(); id != "" {
		fmt.Fprintf(&b, "  (info)       best system/relay configuration %s vs raw: %s\n", id, num(rate/f.RawWindow50, "%.2f"))
	}
	for _, in := range r.infoRows() {
		fmt.Fprintf(&b, "  (info)       %s: %s\n", in.What, in.Value)
	}
	fmt.Fprintln(&b)
	for _, l := range r.KeyLines() {
		fmt.Fprintln(&b, l)
	}
	return b.String()
}

// Markdown renders reports/PERFORMANCE.md.
func (r *Report) Markdown() string {
	var b strings.Builder
	w := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	w("# Performance\n\n")
	w("Generated by `go run ./bench/cmd/outboxbench` (%s); the run took %s. Do not edit by hand: run `make bench` again.\n\n",
		r.mode(), r.Duration.Round(time.Second))
	w("The machine is shared, so absolute numbers drift from run to run; the **ratios** compare measurements taken minutes apart in the same run, on the same PostgreSQL and RabbitMQ.\n\n")
	w("| machine | |\n|---|---|\n%s", reports.Stamp{Commit: r.Commit, Date: r.Started}.Rows())
	w("| cores | %d |\n| Go | %s |\n| PostgreSQL | %s |\n| RabbitMQ | %s |\n| load average (1/5/15 min) at start → end | %s → %s |\n\n",
		r.Cores, r.GoVersion, r.PGVersion, r.RabbitVersion, r.LoadBefore, r.LoadAfter)

	w("## Results\n\n")
	w("| measurement | msgs/s | p50 ms | p99 ms | messages | latency is | checks |\n|---|---:|---:|---:|---:|---|---|\n")
	group := ""
	for _, x := range r.Results {
		if x.Group != group {
			group = x.Group
			w("| **%s** | | | | | | |\n", group)
		}
		if x.Err != "" {
			w("| %s `%s` | FAILED | | | | | %s |\n", x.Name, x.ID, mdEscape(x.Err))
			continue
		}
		w("| %s `%s` | %.0f | %s | %s | %d | %s | %s |\n", x.Name, x.ID, x.Rate, latCell(x.P50), latCell(x.P99), x.Msgs, x.Latency, mdEscape(x.Note))
	}
	w("\n")

	mdSection(&b, "Where the time goes", "Wall-clock time per batch (relays) or per message (worker), summed over replicas, split by a pgx query tracer on the pool (a statement's time runs until its rows are closed, commit included for autocommit statements) and by timing wrappers around the publisher's `PublishBatch` and the vendor client's `Send`. The remainder is everything not inside one of those calls. In `relay.*` (Drain) the next batch is claimed on a goroutine of its own while the previous one is sent, and each sent batch's await and mark run in a goroutine while later batches are claimed and sent, so its shares overlap and add up to more than 100%.", r.breakdownLines())
	mdSection(&b, "CPU per message", "Processor time spent on the whole machine during each timed part, divided by its messages, split into the broker (`beam.smp`), the database (every `postgres` process, with the children the postmaster reaped, so a backend that exits counts), this process (the relay or the raw client, and the bench's own bookkeeping: the pgx tracer and the timing wrappers) and the rest of the machine (kernel threads, other tenants). Read from `/proc` at 10 ms resolution per process. A rate moves with the load on a shared machine; what a message costs moves much less, and on a machine with no idle core the rates would stand in the ratio of these costs.", r.cpuLines())
	mdSection(&b, "Where the database's time goes, by statement", "What the pipeline's statements cost PostgreSQL during each timed part, read from `pg_stat_statements` before and after it (the measurement's own set-up and checks left out), per message: calls, rows per call, time executing (wall time inside the executor: it includes waits for locks and for a CPU, so under load it exceeds the database's CPU), shared buffers touched and dirtied, and bytes of write-ahead log. The relay's two raw statements alone (`raw.sql.relay.b50`) stand beside the relay draining (`relay.r1.b50`) and one batch at a time (`runonce.r1.b50`), the worker's raw inbox statements (`raw.sql.inbox`) beside the worker (`worker.vendor0ms`).", r.stmtLines())
	if m := r.Memory; m != nil {
		w("## Memory and the claim query at %d PENDING rows\n\n", m.Backlog)
		if m.Err != "" {
			w("**FAILED:** %s\n\n", mdEscape(m.Err))
		}
		if m.InsertTime > 0 {
			w("- Backlog: %d PENDING rows inserted with `INSERT … SELECT generate_series` and `VACUUM ANALYZE`d in %.1f s.\n", m.Backlog, m.InsertTime.Seconds())
		}
		if m.Drained > 0 {
			w("- The relay ran as a **separate process** (this executable re-run as the relay child: system/relay with the real publisher, batch 50) and published the first **%d of the %d rows** in %.1f s (%.0f rows/s); draining all of them is not needed, since a run never holds more than one batch. ", m.Drained, m.Backlog, m.DrainTime.Seconds(), float64(m.Drained)/m.DrainTime.Seconds())
			w("Peak RSS **%.1f MB** (`VmHWM` from `/proc/PID/status`, polled by the parent every 20 ms and read by the child at exit); Go heap in use peaked at %.1f MB (heap reserved %.1f MB, sampled from `runtime.MemStats` every 50 ms).\n",
				m.PeakRSSMB, m.HeapPeakMB, m.HeapSysMB)
		}
		if m.PlanCustom != "" {
			w("- Claim query (`relay.ClaimWithLookupsSQL`) uses an index: **%v** — %s.\n\n", m.UsesIndex, m.IndexVerdict)
			w("`EXPLAIN (ANALYZE, BUFFERS)` of `relay.ClaimWithLookupsSQL` planned for its parameters (`plan_cache_mode = force_custom_plan`, in a rolled-back transaction):\n\n```\n%s\n```\n\n", m.PlanCustom)
			w("`EXPLAIN` of the same statement prepared with `plan_cache_mode = force_generic_plan`, the plan the relay runs: the pipeline's connections plan each prepared statement once (`app.PoolConfig`), where PostgreSQL left to itself planned the claim again at every execution:\n\n```\n%s\n```\n\n", m.PlanGeneric)
		}
	}

	f := r.Figures()
	w("## Ratios and targets\n\n")
	w("The relay's ratios compare `relay.r1.b50` (one replica, batch 50 as the spec says, draining the backlog with `Relay.Drain`: each batch is claimed and published while the previous batch's confirms are out, then marked once they are in; `runonce.r1.b50` is the same relay one batch at a time, as its timer loop runs it) with its limit — `raw.publish.window50` and `raw.sql.relay.b50`, the publish and the claim and mark it cannot avoid — and with `baseline.seedstyle.r1.b50` and `baseline.lockholding.r1.b50`, measured in %d interleaved rounds (round r runs each of them on 1/%d of its size, in an order rotated by r) so that a drift in the shared machine's load hits them all alike; the limit is compared by CPU per message, since on a machine with no idle core the relay, which publishes, claims and marks on the same cores, runs at the rate its CPU per message allows; the worker and its two raw limits are interleaved the same way. The worker's raw limit is raw consume + ack with prefetch 1 and the inbox SQL done one after the other: 1 / (1/consume + 1/inbox) = %s msgs/s.\n\n", max(r.Sizes.Rounds, 1), max(r.Sizes.Rounds, 1), num(f.WorkerLimit, "%.0f"))
	w("| target | goal | this run | |\n|---|---|---|---|\n")
	for _, t := range r.Targets() {
		w("| %s | %s | %s | %s |\n", t.What, t.Goal, t.Value, metString(t.Met))
	}
	if id, rate := r.bestRelay(); id != "" {
		w("| best system/relay configuration (`%s`) vs raw publish with 50 in flight (no target) | – | %s | |\n", id, num(rate/f.RawWindow50, "%.2f"))
	}
	for _, in := range r.infoRows() {
		w("| %s (no target) | – | %s | |\n", in.What, in.Value)
	}
	w("%s\n", r.beforeSection())

	w("## How it is measured\n\n")
	w("- Everything runs in one sandbox (a fresh PostgreSQL schema and queue prefix, dropped at the end). Every relay-side measurement starts from `TRUNCATE`, inserts its backlog with `generate_series` (grade renewals for %d seeded members with consent and registered numbers, payloads as `outbox.Enqueue` stores them) and `VACUUM ANALYZE`s it, and gets a fresh copy of the real topology (direct exchange, quorum main queue with single active consumer and delivery limit). Messages are the relay's own: %d–%d bytes of JSON (by the id's digits), persistent, mandatory, with `message_id = notification-outbox-{id}`. The pipeline runs in production mode (`Production = true`), as in production: no registered-number queries (the relay's second lookup and the worker's two).\n", Members, len(bodyFor(1, "2006-01-02")), len(bodyFor(1_000_000, "2006-01-02")))
	w("- The pipeline's logger formats JSON at info level into `io.Discard`: formatting costs what it costs in production, the write is left out. The clock is a virtual one at 10:00 Seoul, so no time-of-day rule intervenes.\n")
	w("- **Relays** run back to back in each replica until a run claims nothing — ours with `Drain` (`relay.*`) or `RunOnce` (`runonce.*`), the baselines with their own `RunOnce`; each replica has its own pool and broker connection, as a separate process would. Rate = rows / wall time. A message's latency is the duration of the run that carried it (claim → marked PUBLISHED); for the seed-style relay, a run's duration divided by its rows. After each drain the run checks that every row is PUBLISHED, no row failed or raised an alert, and the queue holds exactly one message per row.\n")
	w("- **Baselines** (package `bench/baseline`, bench-only) publish through the real `system/publisher`; they skip the relay's lease reclaim and consent re-check (one statement each per batch), which favours them.\n")
	w("- **Raw publish** keeps a sliding window of N unconfirmed messages (a new publish as soon as the oldest is confirmed); latency is publish → confirm; it publishes with amqp091-go as it comes, one write per publish, while `system/publisher` (the relay and both baselines) sends each window of a batch in one write. **Raw consume** rate is over first delivery → last ack; latency is delivery → next delivery. **Worker** rate is steady state, (n−1) over the span between the first and the last SENT result; latency is result → next result, i.e. the per-message service time of the single consumer; each run checks the fake vendor got exactly one call per message and the queue is empty.\n")
	w("- Sizes this run: %s.\n\n", r.sizesLine())

	w("## Machine-readable\n\n```\n")
	for _, l := range r.KeyLines() {
		w("%s\n", l)
	}
	w("```\n")
	b.WriteString(r.Appendix())
	return b.String()
}

// Appendix is the page's sections measured beside the suite (the
// exploration's cost, the peer relays), "" when neither was.
func (r *Report) Appendix() string { return r.exploreSection() + r.peersSection() + r.auditSection() }

func (r *Report) sizesLine() string {
	s := r.Sizes
	return fmt.Sprintf("relay backlog %d rows (seed-style %d), larger batch %d; raw publish %d (each) and %d (window 50, and again with the drain window); relay SQL %d rows; inbox SQL %d; consume %d; worker %d (0 ms) and %d (20 ms); memory backlog %d, drained %d",
		s.RelayRows, s.SeedRows, s.LargeBatch, s.PublishEach, s.PublishWindow, s.SQLRows, s.InboxMsgs, s.ConsumeMsgs, s.Worker0, s.Worker20, s.MemBacklog, s.MemDrain)
}

func mdEscape(s string) string {
	return strings.NewReplacer("|", "\\|", "\n", " ").Replace(s)
}

// breakdownLines renders the phase breakdown of every measurement that has
// one.
func (r *Report) breakdownLines() []string {
	var out []string
	for _, x := range r.Results {
		if x.Err != "" || len(x.Breakdown) == 0 {
			continue
		}
		var total time.Duration
		for _, p := range x.Breakdown {
			total += p.PerUnit
		}
		out = append(out, fmt.Sprintf("`%s`, %.2f ms per %s: %s", x.ID, float64(total)/float64(time.Millisecond), x.Unit, FormatBreakdown(x.Breakdown)))
	}
	return out
}

// bestRelay returns the fastest system/relay measurement.
func (r *Report) bestRelay() (string, float64) {
	id, best := "", 0.0
	for _, x := range r.Results {
		if x.Err == "" && strings.HasPrefix(x.ID, "relay.") && x.Rate > best {
			id, best = x.ID, x.Rate
		}
	}
	return id, best
}

// mdSection writes a section of bullet lines under its title and intro,
// nothing when there are no lines.
func mdSection(b *strings.Builder, title, intro string, lines []string) {
	if len(lines) == 0 {
		return
	}
	fmt.Fprintf(b, "## %s\n\n%s\n\n", title, intro)
	for _, l := range lines {
		fmt.Fprintf(b, "- %s\n", l)
	}
	b.WriteString("\n")
}
