package bench

import (
	"bytes"
	"context"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/outboxchaos/outboxchaos/system/inbox"
	"github.com/outboxchaos/outboxchaos/system/relay"
	"github.com/outboxchaos/outboxchaos/system/testenv"
)

// TestMain lets the memory measurement re-run this test binary as the relay
// child process.
func TestMain(m *testing.M) {
	RunChildIfRequested()
	os.Exit(m.Run())
}

// tinySizes run every measurement on a few dozen messages: the point is to
// exercise the code, not to time it.
func tinySizes() Sizes {
	return Sizes{
		RelayRows: 120, LargeBatch: 60, SeedRows: 20,
		PublishEach: 10, PublishWindow: 120, SQLRows: 120,
		InboxMsgs: 10, ConsumeMsgs: 20, Worker0: 15, Worker20: 3,
		MemBacklog: 2_000, MemDrain: 120, Rounds: 2,
	}
}

// The whole suite runs on tiny sizes in a testenv schema and prefix: every
// measurement succeeds with its own checks (every row PUBLISHED, one
// message per row, one vendor call per message, EXPLAIN taken, RSS read
// from the child), and the report carries the eight key lines. No timing
// is asserted.
func TestRun_TinySuiteSucceeds(t *testing.T) {
	t.Parallel()
	db := testenv.NewMigratedSchema(t)
	prefix := testenv.NewPrefix(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	e, err := Attach(ctx, db.URL, testenv.AMQPURL(), prefix)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := e.Close(); err != nil {
			t.Errorf("close env: %v", err)
		}
	})
	var progress bytes.Buffer
	rep, err := Run(ctx, Options{Sizes: tinySizes(), Env: e, Progress: &progress})
	if err != nil {
		t.Fatalf("run: %v\n%s", err, progress.String())
	}
	if rep.Failed() {
		t.Fatalf("a measurement failed:\n%s\n%s", rep.Text(), progress.String())
	}
	want := []string{IDRawPublishEach, IDRawPublishWindow, IDRawPublishDrainWindow, IDRawRelaySQL, IDRawInboxSQL, IDRawConsume, IDRelay,
		IDRelayRunOnce, "relay.r2.b50", "relay.r1.b60", "relay.r2.b60", IDLockHolding, "baseline.lockholding.r2.b50", IDSeedStyle,
		IDWorker0, IDWorker20}
	interleaved := map[string]bool{IDRawPublishWindow: true, IDRawPublishDrainWindow: true, IDRawRelaySQL: true, IDRelay: true, IDLockHolding: true, IDSeedStyle: true,
		IDRawConsume: true, IDRawInboxSQL: true, IDWorker0: true}
	if len(rep.Results) != len(want) {
		t.Fatalf("%d results, want %d:\n%s", len(rep.Results), len(want), rep.Text())
	}
	for i, id := range want {
		r := rep.Results[i]
		if r.ID != id || r.Rate <= 0 || r.Msgs <= 0 {
			t.Errorf("result %d: %s rate %.1f msgs %d; want %s with a positive rate", i, r.ID, r.Rate, r.Msgs, id)
		}
		if interleaved[id] != (r.Rounds == 2) {
			t.Errorf("%s merged %d rounds", id, r.Rounds)
		}
		if strings.HasPrefix(id, "relay.") || strings.HasPrefix(id, "baseline.") || strings.HasPrefix(id, "worker.") {
			if len(r.Breakdown) == 0 {
				t.Errorf("%s has no time breakdown", id)
			}
		}
	}
	// With pg_stat_statements loaded, the relay's statements are split
	// beside its raw ones; without it the page says why.
	if rep.StmtsWhy == "" {
		for _, id := range []string{IDRawRelaySQL, IDRelay, IDWorker0} {
			r, _ := rep.Result(id)
			if !slices.ContainsFunc(r.Statements, func(c StmtCost) bool { return c.Calls > 0 && c.Exec > 0 }) {
				t.Errorf("%s: no statement split %+v", id, r.Statements)
			}
		}
	} else {
		t.Logf("statement split not measured: %s", rep.StmtsWhy)
	}
	if r, _ := rep.Result(IDRelay); r.Msgs != 120 {
		t.Errorf("relay published %d rows over its two rounds, want 120", r.Msgs)
	}
	m := rep.Memory
	if m == nil || m.Drained < 120 || m.PeakRSSMB <= 0 || m.PlanCustom == "" || m.PlanGeneric == "" {
		t.Fatalf("memory result %+v", m)
	}
	t.Logf("claim plan at %d rows uses index: %v (%s)", m.Backlog, m.UsesIndex, m.IndexVerdict)
	for _, s := range []string{"start " + IDRelay + " [round 2/2]", "done  " + IDRelay, "start " + IDMemory, "done  " + IDMemory} {
		if !strings.Contains(progress.String(), s) {
			t.Errorf("progress output lacks %q:\n%s", s, progress.String())
		}
	}
	md := rep.Markdown()
	for _, l := range rep.KeyLines() {
		if strings.HasSuffix(l, "=n/a") {
			t.Errorf("key line %s: every measurement ran", l)
		}
		if !strings.Contains(md, l+"\n") || !strings.Contains(rep.Text(), l+"\n") {
			t.Errorf("key line %s missing from the report", l)
		}
	}
	// Nothing the run declared is left on the broker.
	if len(e.topologies) != 0 {
		t.Errorf("topologies left declared: %v", keys(e.topologies))
	}
}

func TestKeyLines_ExactKeysAndRatios(t *testing.T) {
	t.Parallel()
	rep := &Report{Sizes: DefaultSizes(false, 0), Results: []Result{
		{ID: IDRawPublishWindow, Rate: 3750, Msgs: 1000, CPUOK: true, CPU: CPU{Broker: 80 * time.Millisecond, Self: 20 * time.Millisecond}},
		{ID: IDRawRelaySQL, Rate: 9000, Msgs: 1000, CPUOK: true, CPU: CPU{Database: 50 * time.Millisecond}},
		{ID: IDRelay, Rate: 3000, Msgs: 1000, CPUOK: true, CPU: CPU{Broker: 80 * time.Millisecond, Database: 60 * time.Millisecond, Self: 20 * time.Millisecond}},
		{ID: IDSeedStyle, Rate: 300},
		{ID: IDLockHolding, Rate: 2500, Err: "boom"}, // failed: n/a
		{ID: IDWorker0, Rate: 100},
		{ID: IDRawConsume, Rate: 400},
		{ID: IDRawInboxSQL, Rate: 400},
	}, Memory: &MemoryResult{PeakRSSMB: 21.04, PlanCustom: "x", UsesIndex: true}}
	want := []string{
		"relay_msgs_per_s=3000",
		"raw_confirm_window50_msgs_per_s=3750",
		"relay_vs_raw_ratio=0.80",
		"relay_vs_seed_style_ratio=10.00",
		"relay_vs_lock_holding_ratio=n/a",
		"relay_vs_limit_cpu_ratio=0.94",
		"worker_msgs_per_s_vendor0ms=100",
		"worker_vs_limit_ratio=0.50",
		"relay_peak_rss_mb_1m_backlog=21.0",
		"claim_query_uses_index=true",
	}
	got := rep.KeyLines()
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("key lines:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	met := map[string]string{}
	for _, tg := range rep.Targets() {
		met[tg.What] = metString(tg.Met)
	}
	// Worker limit 1/(1/400+1/400) = 200; 100/200 = 0.5: met. The relay's
	// limit (100 + 50 µs) over the relay (160 µs) = 0.94: met. The
	// lock-holding relay failed: not measured.
	for what, m := range met {
		want := "met"
		if strings.HasPrefix(what, "relay vs lock-holding") {
			want = "not measured"
		}
		if m != want {
			t.Errorf("target %q: %s, want %s", what, m, want)
		}
	}
	if !rep.Failed() {
		t.Error("a failed measurement does not fail the report")
	}
}

func TestLatencies_WeightedPercentiles(t *testing.T) {
	t.Parallel()
	var l Latencies
	if l.Percentile(0.5) != 0 {
		t.Fatal("empty latencies have a percentile")
	}
	l.Add(10*time.Millisecond, 98) // a batch of 98 messages
	l.Add(time.Second, 1)
	l.Add(2*time.Second, 1)
	if got := l.Percentile(0.5); got != 10*time.Millisecond {
		t.Errorf("p50 %s, want 10ms", got)
	}
	if got := l.Percentile(0.99); got != time.Second {
		t.Errorf("p99 %s, want 1s (the 99th of 100 messages)", got)
	}
	if got := l.Percentile(1); got != 2*time.Second {
		t.Errorf("p100 %s, want 2s", got)
	}
	if l.Count() != 100 {
		t.Errorf("count %d, want 100", l.Count())
	}
}

func TestPhaseOf_NamesThePipelineStatements(t *testing.T) {
	t.Parallel()
	cases := map[string]string{
		relay.ClaimSQL:            "sql claim (UPDATE … SKIP LOCKED)",
		relay.ClaimWithLookupsSQL: "sql claim + consent lookup (one statement)",
		relay.MarkSQL:             "sql mark PUBLISHED",
		inbox.ClaimSQL:            "sql inbox claim INSERT",
		inbox.FinishSQL:           "sql inbox result UPDATE",
		`SELECT EXISTS (SELECT 1 FROM notification_histories WHERE message_id = $1)`: "sql inbox peek",
		`SELECT id, sms_consent AND active FROM members WHERE id = ANY($1)`:          "sql consent lookup",
		"begin":  "sql begin",
		"commit": "sql commit",
		`UPDATE notification_outbox SET status = 'PENDING' WHERE status = 'PUBLISHING' AND claimed_until < $1`: "sql reclaim expired leases",
	}
	for sql, want := range cases {
		if got := phaseOf(sql); got != want {
			t.Errorf("phaseOf(%.50q) = %q, want %q", sql, got, want)
		}
	}
}

func TestProcStatusKB_ReadsOwnPeakRSS(t *testing.T) {
	t.Parallel()
	kb, err := procStatusKB("self", "VmHWM")
	if err != nil {
		t.Skipf("no /proc here: %v", err)
	}
	if kb <= 0 {
		t.Fatalf("VmHWM %d kB", kb)
	}
}

func TestUsesIndex(t *testing.T) {
	t.Parallel()
	good := "Index Scan using notification_outbox_pending_idx on notification_outbox"
	if ok, why := usesIndex(good, good); !ok {
		t.Errorf("index plans rejected: %s", why)
	}
	seq := "Seq Scan on notification_outbox\n  Filter: (status = 'PENDING'::text)"
	if ok, _ := usesIndex(good, seq); ok {
		t.Error("a generic plan with a Seq Scan passed")
	}
}

func TestMergeRounds_PoolsMessagesTimeAndPhases(t *testing.T) {
	t.Parallel()
	mk := func(n int, d time.Duration) Result {
		r := Result{ID: "x"}
		lat := &Latencies{}
		lat.Add(d, n)
		r.finish(n, time.Duration(n)*d, lat)
		ph := &Phases{}
		ph.Add("sql", d/2)
		r.trace(ph, "batch", 1, d, "rest")
		return r
	}
	m := mergeRounds([]Result{mk(100, time.Millisecond), mk(300, 3*time.Millisecond)})
	// 400 messages in 0.1 s + 0.9 s.
	if m.Msgs != 400 || m.Elapsed != time.Second || m.Rate != 400 || m.Rounds != 2 {
		t.Fatalf("merged %+v", m)
	}
	if m.P50 != 3*time.Millisecond || m.P99 != 3*time.Millisecond {
		t.Errorf("p50 %s p99 %s, want 3ms (300 of 400 messages)", m.P50, m.P99)
	}
	// Two batches, 4 ms busy, 2 ms of it in sql.
	if len(m.Breakdown) != 2 || m.Breakdown[0].PerUnit != time.Millisecond || m.Breakdown[1].Name != "rest" {
		t.Errorf("breakdown %+v", m.Breakdown)
	}
	failed := mk(10, time.Millisecond)
	failed.Err = "boom"
	if m := mergeRounds([]Result{mk(10, time.Millisecond), failed}); !strings.Contains(m.Err, "round 2: boom") {
		t.Errorf("a failed round merged to err %q", m.Err)
	}
}
