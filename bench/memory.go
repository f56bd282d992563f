package bench

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/outboxchaos/outboxchaos/system/app"
	"github.com/outboxchaos/outboxchaos/system/broker"
	"github.com/outboxchaos/outboxchaos/system/config"
	"github.com/outboxchaos/outboxchaos/system/publisher"
	"github.com/outboxchaos/outboxchaos/system/relay"
)

// Environment of the relay child process (see RunChildIfRequested).
const (
	childEnv      = "OUTBOXBENCH_CHILD"       // "relay" selects the child
	childLimitEnv = "OUTBOXBENCH_CHILD_LIMIT" // rows to publish before exiting
)

// ChildReport is what the relay child prints (one JSON line) when it exits.
type ChildReport struct {
	Published     int     `json:"published"`
	Runs          int     `json:"runs"`
	ElapsedSec    float64 `json:"elapsed_s"`
	VmHWMKB       int     `json:"vmhwm_kb"`        // peak RSS, from /proc/self/status
	HeapInusePeak uint64  `json:"heap_inuse_peak"` // sampled runtime.MemStats peaks
	HeapSysPeak   uint64  `json:"heap_sys_peak"`
	SysPeak       uint64  `json:"sys_peak"`
	NumGC         uint32  `json:"num_gc"`
	Error         string  `json:"error,omitempty"`
}

// RunChildIfRequested turns this process into the relay child when the
// parent started it for the memory measurement: it runs system/relay with
// the configuration in the OUTBOXCHAOS_* environment until it has published
// OUTBOXBENCH_CHILD_LIMIT rows or a run claims nothing, prints a ChildReport
// and exits. Otherwise it returns at once. Call it first thing in main (and
// in TestMain).
func RunChildIfRequested() {
	if os.Getenv(childEnv) != "relay" {
		return
	}
	rep := runRelayChild(context.Background())
	_ = json.NewEncoder(os.Stdout).Encode(rep)
	if rep.Error != "" {
		os.Exit(1)
	}
	os.Exit(0)
}

func runRelayChild(ctx context.Context) (rep ChildReport) {
	fail := func(err error) ChildReport { rep.Error = err.Error(); return rep }
	cfg, err := config.Load()
	if err != nil {
		return fail(fmt.Errorf("child configuration: %w", err))
	}
	limit, err := strconv.Atoi(os.Getenv(childLimitEnv))
	if err != nil || limit < 1 {
		return fail(fmt.Errorf("%s=%q: want a positive row count", childLimitEnv, os.Getenv(childLimitEnv)))
	}
	clk, err := cfg.NewClock()
	if err != nil {
		return fail(err)
	}
	pool, err := app.OpenPool(ctx, cfg)
	if err != nil {
		return fail(err)
	}
	defer pool.Close()
	pub := publisher.New(cfg.AMQPURL, broker.NamesFor(cfg.Prefix).Exchange, cfg.ConfirmTimeout)
	defer pub.Close()
	if err := pub.Connect(ctx); err != nil {
		return fail(fmt.Errorf("connect publisher: %w", err))
	}
	log := slog.New(slog.NewJSONHandler(io.Discard, nil))
	r := relay.New(cfg, pool, pub, clk, &countingAlerts{}, log)

	var mu sync.Mutex
	sample := func() {
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		mu.Lock()
		rep.HeapInusePeak = max(rep.HeapInusePeak, ms.HeapInuse)
		rep.HeapSysPeak = max(rep.HeapSysPeak, ms.HeapSys)
		rep.SysPeak = max(rep.SysPeak, ms.Sys)
		rep.NumGC = ms.NumGC
		mu.Unlock()
	}
	done := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		t := time.NewTicker(50 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				sample()
			}
		}
	}()
	start := time.Now()
	var runErr error
	for rep.Published < limit {
		st, err := r.RunOnce(ctx)
		if err != nil {
			runErr = err
			break
		}
		rep.Runs++
		rep.Published += st.Published
		if st.Claimed == 0 {
			break
		}
	}
	rep.ElapsedSec = time.Since(start).Seconds()
	close(done)
	<-sampled
	sample()
	rep.VmHWMKB, err = procStatusKB("self", "VmHWM")
	if runErr == nil {
		runErr = err
	}
	if runErr != nil {
		rep.Error = runErr.Error()
	}
	return rep
}

// procStatusKB reads a "Name: N kB" field of /proc/PID/status.
func procStatusKB(pid, field string) (int, error) {
	b, err := os.ReadFile("/proc/" + pid + "/status")
	if err != nil {
		return 0, fmt.Errorf("read /proc/%s/status: %w", pid, err)
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		name, rest, ok := strings.Cut(sc.Text(), ":")
		if !ok || name != field {
			continue
		}
		v, err := strconv.Atoi(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")))
		if err != nil {
			return 0, fmt.Errorf("parse %s in /proc/%s/status: %w", field, pid, err)
		}
		return v, nil
	}
	return 0, fmt.Errorf("no %s in /proc/%s/status", field, pid)
}

// MemoryResult is the outcome of MeasureMemory.
type MemoryResult struct {
	Backlog      int           // PENDING rows when the child started
	InsertTime   time.Duration // INSERT … SELECT generate_series + VACUUM ANALYZE
	Drained      int           // rows the child published
	DrainTime    time.Duration
	PeakRSSMB    float64 // max of the parent's /proc/PID/status VmHWM polls and the child's own
	HeapPeakMB   float64 // child's sampled HeapInuse peak
	HeapSysMB    float64 // child's sampled HeapSys peak
	PlanCustom   string  // EXPLAIN (ANALYZE, BUFFERS) of relay.ClaimWithLookupsSQL, custom plan
	PlanGeneric  string  // EXPLAIN of the prepared statement with a forced generic plan
	UsesIndex    bool    // both plans reach the rows through notification_outbox_pending_idx, no Seq Scan
	IndexVerdict string  // why UsesIndex is what it is
	Err          string
}

// MeasureMemory inserts a backlog of backlog PENDING rows, ANALYZEs, takes
// EXPLAIN of relay.ClaimWithLookupsSQL (custom and generic plan), then starts the relay
// as a child process of this executable (see RunChildIfRequested) and lets
// it publish drain rows (batch size cfg.BatchSize), reading the child's
// /proc/PID/status VmHWM while it runs. progress gets one line per phase.
func MeasureMemory(ctx context.Context, e *Env, backlog, drain int, progress func(string)) (res MemoryResult) {
	res.Backlog = backlog
	fail := func(err error) MemoryResult { res.Err = err.Error(); return res }
	if err := e.ResetOutbox(ctx); err != nil {
		return fail(err)
	}
	start := time.Now()
	if err := e.Backlog(ctx, 1, int64(backlog), func(done int64) {
		progress(fmt.Sprintf("inserted %d of %d backlog rows (%.1fs)", done, backlog, time.Since(start).Seconds()))
	}); err != nil {
		return fail(err)
	}
	res.InsertTime = time.Since(start)
	progress(fmt.Sprintf("backlog of %d rows ready and analyzed in %.1fs; EXPLAIN of the claim", backlog, res.InsertTime.Seconds()))
	var err error
	if res.PlanCustom, res.PlanGeneric, err = explainClaim(ctx, e); err != nil {
		return fail(err)
	}
	res.UsesIndex, res.IndexVerdict = usesIndex(res.PlanCustom, res.PlanGeneric)

	cfg, err := e.Topology("mem")
	defer func() {
		dctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if derr := e.DropTopology(dctx, cfg.Prefix); derr != nil && res.Err == "" {
			res.Err = derr.Error()
		}
	}()
	if err != nil {
		return fail(err)
	}
	cfg.Instance = "bench-relay-child"
	progress(fmt.Sprintf("relay child process draining %d of the %d rows", drain, backlog))
	rep, peakKB, err := runChild(ctx, cfg, drain)
	if err != nil {
		return fail(err)
	}
	res.Drained = rep.Published
	res.DrainTime = time.Duration(rep.ElapsedSec * float64(time.Second))
	res.PeakRSSMB = float64(max(peakKB, rep.VmHWMKB)) / 1024
	res.HeapPeakMB = float64(rep.HeapInusePeak) / (1 << 20)
	res.HeapSysMB = float64(rep.HeapSysPeak) / (1 << 20)
	if rep.Published < drain {
		return fail(fmt.Errorf("relay child published %d of %d rows", rep.Published, drain))
	}
	return res
}

// runChild starts this executable as the relay child and polls its VmHWM
// every 20 ms until it exits.
func runChild(ctx context.Context, cfg config.Config, limit int) (ChildReport, int, error) {
	var rep ChildReport
	exe, err := os.Executable()
	if err != nil {
		return rep, 0, fmt.Errorf("find own executable for the relay child: %w", err)
	}
	cmd := exec.CommandContext(ctx, exe)
	cmd.Env = append(append(os.Environ(), cfg.Env()...), childEnv+"=relay", childLimitEnv+"="+strconv.Itoa(limit))
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Start(); err != nil {
		return rep, 0, fmt.Errorf("start relay child: %w", err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	pid := strconv.Itoa(cmd.Process.Pid)
	peak := 0
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	var werr error
poll:
	for {
		select {
		case werr = <-exited:
			break poll
		case <-tick.C:
			if kb, err := procStatusKB(pid, "VmHWM"); err == nil {
				peak = max(peak, kb)
			}
		}
	}
	line := bytes.TrimSpace(stdout.Bytes())
	if i := bytes.LastIndexByte(line, '\n'); i >= 0 {
		line = line[i+1:]
	}
	if err := json.Unmarshal(line, &rep); err != nil {
		return rep, peak, fmt.Errorf("relay child (%v) printed no report: %w; stderr: %s", werr, err, tail(stderr.String()))
	}
	if rep.Error != "" {
		return rep, peak, fmt.Errorf("relay child: %s", rep.Error)
	}
	if werr != nil {
		return rep, peak, fmt.Errorf("relay child: %w; stderr: %s", werr, tail(stderr.String()))
	}
	return rep, peak, nil
}

func tail(s string) string {
	if len(s) > 2000 {
		return "…" + s[len(s)-2000:]
	}
	return s
}

// explainClaim returns EXPLAIN (ANALYZE, BUFFERS) of relay.ClaimWithLookupsSQL
// planned for its parameters (a custom plan; rolled back, so nothing is
// claimed), and EXPLAIN of the same statement prepared with
// plan_cache_mode = force_generic_plan, the plan that cannot see the
// parameter values: the one the relay runs, since the pipeline's
// connections plan each statement once (app.PoolConfig).
func explainClaim(ctx context.Context, e *Env) (custom, generic string, err error) {
	conn, err := e.Pool.Acquire(ctx)
	if err != nil {
		return "", "", fmt.Errorf("acquire connection for EXPLAIN: %w", err)
	}
	defer conn.Release()
	now := e.Clock.Now()
	plan := func(tx pgx.Tx, sql string, args ...any) (string, error) {
		rows, err := tx.Query(ctx, sql, args...)
		if err != nil {
			return "", err
		}
		defer rows.Close()
		var lines []string
		for rows.Next() {
			var l string
			if err := rows.Scan(&l); err != nil {
				return "", err
			}
			lines = append(lines, l)
		}
		return strings.Join(lines, "\n"), rows.Err()
	}
	tx, err := conn.Begin(ctx)
	if err != nil {
		return "", "", fmt.Errorf("begin EXPLAIN transaction: %w", err)
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	if _, err := tx.Exec(ctx, `SET LOCAL plan_cache_mode = force_custom_plan`); err != nil {
		return "", "", fmt.Errorf("ask for a custom plan: %w", err)
	}
	custom, err = plan(tx, `EXPLAIN (ANALYZE, BUFFERS) `+relay.ClaimWithLookupsSQL, "bench-explain", now.Add(e.Cfg.Lease), now, e.Cfg.BatchSize)
	if err != nil {
		return "", "", fmt.Errorf("EXPLAIN relay.ClaimWithLookupsSQL: %w", err)
	}
	if _, err := tx.Exec(ctx, `SET LOCAL plan_cache_mode = force_generic_plan`); err != nil {
		return "", "", fmt.Errorf("force generic plan: %w", err)
	}
	if _, err := tx.Exec(ctx, `PREPARE bench_claim(text, timestamptz, timestamptz, bigint) AS `+relay.ClaimWithLookupsSQL); err != nil {
		return "", "", fmt.Errorf("prepare relay.ClaimWithLookupsSQL: %w", err)
	}
	defer func() { _, _ = conn.Exec(context.WithoutCancel(ctx), `DEALLOCATE bench_claim`) }()
	ts := func(t time.Time) string { return "'" + t.Format(time.RFC3339Nano) + "'" }
	generic, err = plan(tx, fmt.Sprintf(`EXPLAIN EXECUTE bench_claim('bench-explain', %s, %s, %d)`,
		ts(now.Add(e.Cfg.Lease)), ts(now), e.Cfg.BatchSize))
	if err != nil {
		return "", "", fmt.Errorf("EXPLAIN generic plan of relay.ClaimWithLookupsSQL: %w", err)
	}
	return custom, generic, nil
}

// usesIndex reports whether both plans reach the PENDING rows through the
// partial index and none scans the outbox sequentially.
func usesIndex(plans ...string) (bool, string) {
	var problems []string
	for i, p := range plans {
		which := []string{"custom", "generic"}[min(i, 1)]
		if strings.Contains(p, "Seq Scan on notification_outbox") {
			problems = append(problems, which+" plan has a Seq Scan on notification_outbox")
		}
		if !strings.Contains(p, "notification_outbox_pending_idx") {
			problems = append(problems, which+" plan does not use notification_outbox_pending_idx")
		}
	}
	if len(problems) > 0 {
		return false, strings.Join(problems, "; ")
	}
	return true, "custom and generic plans both scan notification_outbox_pending_idx; no Seq Scan"
}
