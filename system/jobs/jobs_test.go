package jobs_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/outboxchaos/outboxchaos/history"
	"github.com/outboxchaos/outboxchaos/system/alert"
	"github.com/outboxchaos/outboxchaos/system/clock"
	"github.com/outboxchaos/outboxchaos/system/jobs"
	"github.com/outboxchaos/outboxchaos/system/killpoint"
	"github.com/outboxchaos/outboxchaos/system/notification"
	"github.com/outboxchaos/outboxchaos/system/outbox"
	"github.com/outboxchaos/outboxchaos/system/testenv"
)

func quietLog() *slog.Logger { return slog.New(slog.DiscardHandler) }

// testNow is 10:00 Seoul today: every job and date rule is stated in Seoul.
func testNow() time.Time { return clock.At(time.Now(), 10, 0) }

func newRunner(pool *pgxpool.Pool, now time.Time, rec alert.Sender) *jobs.Runner {
	return jobs.NewRunner(pool, clock.NewVirtual(now, 0), rec, quietLog())
}

func dedupKeys(t *testing.T, pool *pgxpool.Pool) []string {
	t.Helper()
	rows, err := outbox.All(context.Background(), pool)
	if err != nil {
		t.Fatal(err)
	}
	keys := make([]string, len(rows))
	for i, r := range rows {
		keys[i] = r.DedupKey
	}
	sort.Strings(keys)
	return keys
}

// couponIDs maps member id to the coupon id issued for it.
func couponIDs(t *testing.T, pool *pgxpool.Pool) map[int64]int64 {
	t.Helper()
	rows, err := pool.Query(context.Background(), `SELECT member_id, id FROM coupons`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	out := map[int64]int64{}
	for rows.Next() {
		var m, id int64
		if err := rows.Scan(&m, &id); err != nil {
			t.Fatal(err)
		}
		out[m] = id
	}
	return out
}

// design §2: re-running a job inserts 0 new rows for members already enqueued.
func TestRun_RerunInsertsNothingNew(t *testing.T) {
	t.Parallel()
	db := testenv.NewMigratedSchema(t)
	ctx := context.Background()
	now := testNow()
	const perKind = 3
	if err := jobs.Seed(ctx, db.Pool, now, perKind, nil); err != nil {
		t.Fatal(err)
	}
	rec := &testenv.AlertRecorder{}
	r := newRunner(db.Pool, now, rec)
	st, err := r.Run(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := perKind * len(notification.Kinds)
	if st.Inserted != want || st.Existing != 0 || st.Lost != 0 {
		t.Fatalf("first run %+v, want %d inserted", st, want)
	}
	first := dedupKeys(t, db.Pool)
	st, err = r.Run(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	// Non-anniversary jobs find their rows present; the anniversary job
	// finds its coupons issued and has nothing left to do.
	if st.Inserted != 0 || st.Lost != 0 || st.Existing != perKind*(len(notification.Kinds)-1) {
		t.Fatalf("re-run %+v, want 0 inserted, %d existing", st, perKind*(len(notification.Kinds)-1))
	}
	if again := dedupKeys(t, db.Pool); strings.Join(again, ",") != strings.Join(first, ",") {
		t.Fatalf("re-run changed the outbox:\n%v\n%v", first, again)
	}
	if n := len(couponIDs(t, db.Pool)); n != perKind {
		t.Fatalf("%d coupons after two runs, want %d", n, perKind)
	}
	if a := rec.All(); len(a) != 0 {
		t.Fatalf("unexpected alerts %+v", a)
	}
}

// A job that died half-way (some of its rows committed by an earlier run)
// completes the rest on re-run without duplicates.
func TestRun_RerunAfterPartialRunCompletesWithoutDuplicates(t *testing.T) {
	t.Parallel()
	db := testenv.NewMigratedSchema(t)
	ctx := context.Background()
	now := testNow()
	if err := jobs.Seed(ctx, db.Pool, now, 2, []notification.Kind{notification.GradeRenewal}); err != nil {
		t.Fatal(err)
	}
	r := newRunner(db.Pool, now, &testenv.AlertRecorder{})
	if _, err := r.Run(ctx, []notification.Kind{notification.GradeRenewal}); err != nil {
		t.Fatal(err)
	}
	// More members become due; the re-run picks up only the new ones.
	if err := jobs.Seed(ctx, db.Pool, now, 5, []notification.Kind{notification.GradeRenewal}); err != nil {
		t.Fatal(err)
	}
	st, err := r.Run(ctx, []notification.Kind{notification.GradeRenewal})
	if err != nil {
		t.Fatal(err)
	}
	if st.Inserted != 3 || st.Existing != 2 {
		t.Fatalf("re-run %+v, want 3 inserted, 2 existing", st)
	}
	if n := len(dedupKeys(t, db.Pool)); n != 5 {
		t.Fatalf("%d rows, want 5", n)
	}
}

// design §2 table: the dedup keys are the documented formats, built from the
// business keys (written out here independently of the notification
// package's helpers).
func TestRun_DedupKeysMatchSpecFormats(t *testing.T) {
	t.Parallel()
	db := testenv.NewMigratedSchema(t)
	ctx := context.Background()
	now := testNow()
	if err := jobs.Seed(ctx, db.Pool, now, 2, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := newRunner(db.Pool, now, &testenv.AlertRecorder{}).Run(ctx, nil); err != nil {
		t.Fatal(err)
	}
	day := clock.Date(now).Format("2006-01-02")
	month := clock.Date(now).Format("2006-01")
	deadline := clock.Date(now).AddDate(0, 0, 3).Format("2006-01-02")
	coupons := couponIDs(t, db.Pool)
	var want []string
	for m := int64(1); m <= 2; m++ {
		want = append(want,
			fmt.Sprintf("GRADE_RENEWAL:%d", m), // grade history id = member id in Seed
			fmt.Sprintf("MONTHLY_AWARDS_WINNING:%d", m),
			fmt.Sprintf("MONTHLY_AWARDS_CLOSING:%d:%s", m, deadline),
			fmt.Sprintf("MISSION_PARTICIPATION_REMINDER:%s:%d", day, m),
			fmt.Sprintf("GRADE_LOCK_IN:%s:%d", month, m),
			fmt.Sprintf("ANNIVERSARY_COUPON:%d", coupons[m]),
		)
	}
	sort.Strings(want)
	got := dedupKeys(t, db.Pool)
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("dedup keys:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	// Payload and columns agree with the kind: ads flagged, the scheduled
	// date is today in Seoul, the phone is the member's.
	rows, err := outbox.All(ctx, db.Pool)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rows {
		var p notification.Payload
		if err := json.Unmarshal(r.Payload, &p); err != nil {
			t.Fatal(err)
		}
		k := notification.Kind(r.Kind)
		if p.Kind != k || r.Advertising != k.Advertising() || p.Advertising != k.Advertising() ||
			r.ScheduledDate.Format(time.DateOnly) != day || p.ScheduledDate != day || p.Phone != jobs.Phone(p.MemberID) {
			t.Errorf("row %s: %+v payload %+v", r.DedupKey, r, p)
		}
		tpl, _ := notification.TemplateFor(k)
		if _, err := notification.Render(notification.MessageID(r.ID), p); err != nil || p.Template != tpl.Code {
			t.Errorf("row %s cannot be rendered: %v", r.DedupKey, err)
		}
	}
}

// Helper process: runs jobs in a child so that kill-points and failpoints
// (process-wide) never touch the parent's other tests.
const helperEnv = "OUTBOXCHAOS_JOBS_TEST_HELPER"

func TestHelperProcess(t *testing.T) {
	t.Parallel()
	if os.Getenv(helperEnv) == "" {
		t.Skip("helper process for the kill-point and failpoint tests")
	}
	// The helper is a process entry point: it arms the hooks it was
	// started with, as cmd/outboxchaos does.
	if err := killpoint.ArmFromEnv(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, os.Getenv("HELPER_PG_URL"))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(3)
	}
	now, err := time.Parse(time.RFC3339Nano, os.Getenv("HELPER_NOW"))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(3)
	}
	out := &stdoutSender{}
	var kinds []notification.Kind
	for _, k := range strings.Split(os.Getenv("HELPER_KINDS"), ",") {
		kinds = append(kinds, notification.Kind(k))
	}
	r := jobs.NewRunner(pool, clock.NewVirtual(now, 0), out, quietLog())
	st, err := r.Run(ctx, kinds)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(4)
	}
	b, _ := json.Marshal(st)
	fmt.Printf("STATS %s\n", b)
	os.Exit(0)
}

type stdoutSender struct{ mu sync.Mutex }

func (s *stdoutSender) Send(_ context.Context, a alert.Alert) {
	s.mu.Lock()
	defer s.mu.Unlock()
	b, _ := json.Marshal(a)
	fmt.Printf("ALERT %s\n", b)
}

type helperResult struct {
	exitErr error
	stdout  string
	stderr  string
	alerts  []alert.Alert
	stats   *jobs.Stats
}

func runHelper(t *testing.T, db *testenv.DB, now time.Time, kinds []notification.Kind, env ...string) helperResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var ks []string
	for _, k := range kinds {
		ks = append(ks, string(k))
	}
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestHelperProcess$", "-test.count=1")
	cmd.Env = append(os.Environ(), helperEnv+"=1", "HELPER_PG_URL="+db.URL,
		"HELPER_NOW="+now.Format(time.RFC3339Nano), "HELPER_KINDS="+strings.Join(ks, ","),
		killpoint.EnvVar+"=", killpoint.FailEnvVar+"=")
	cmd.Env = append(cmd.Env, env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	res := helperResult{exitErr: cmd.Run(), stdout: stdout.String(), stderr: stderr.String()}
	sc := bufio.NewScanner(strings.NewReader(res.stdout))
	for sc.Scan() {
		line := sc.Text()
		if rest, ok := strings.CutPrefix(line, "ALERT "); ok {
			var a alert.Alert
			if err := json.Unmarshal([]byte(rest), &a); err != nil {
				t.Fatalf("bad alert line %q: %v", line, err)
			}
			res.alerts = append(res.alerts, a)
		}
		if rest, ok := strings.CutPrefix(line, "STATS "); ok {
			var st jobs.Stats
			if err := json.Unmarshal([]byte(rest), &st); err != nil {
				t.Fatalf("bad stats line %q: %v", line, err)
			}
			res.stats = &st
		}
	}
	return res
}

// design §6 case 1: a job killed (SIGKILL) before its commit leaves no row;
// the re-run recomputes and inserts every row exactly once.
func TestRun_KilledBeforeCommitLeavesNoRows(t *testing.T) {
	t.Parallel()
	db := testenv.NewMigratedSchema(t)
	ctx := context.Background()
	now := testNow()
	kinds := []notification.Kind{notification.GradeRenewal}
	if err := jobs.Seed(ctx, db.Pool, now, 4, kinds); err != nil {
		t.Fatal(err)
	}
	res := runHelper(t, db, now, kinds, killpoint.EnvVar+"="+killpoint.JobBeforeCommit)
	var ee *exec.ExitError
	if !errors.As(res.exitErr, &ee) {
		t.Fatalf("child was not killed: err=%v\nstdout:%s\nstderr:%s", res.exitErr, res.stdout, res.stderr)
	}
	if ws, ok := ee.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
		t.Fatalf("child ended with %v, want SIGKILL\nstderr:%s", res.exitErr, res.stderr)
	}
	if !strings.Contains(res.stderr, "KILLPOINT "+killpoint.JobBeforeCommit+" hit 1") {
		t.Fatalf("kill-point did not fire:\n%s", res.stderr)
	}
	if keys := dedupKeys(t, db.Pool); len(keys) != 0 {
		t.Fatalf("killed job left %d rows: %v", len(keys), keys)
	}
	st, err := newRunner(db.Pool, now, &testenv.AlertRecorder{}).Run(ctx, kinds)
	if err != nil {
		t.Fatal(err)
	}
	if st.Inserted != 4 || st.Existing != 0 {
		t.Fatalf("re-run %+v, want 4 inserted", st)
	}
}

// A job killed after an anniversary coupon's INSERT, before its outbox
// insert, commits neither (they share a transaction): the re-run issues
// every coupon and enqueues every notification. (They used to commit
// apart: the crash left a coupon whose notification no run would ever
// enqueue or alert — a silent loss, scenario anniversary-crash-after-coupon.)
func TestAnniversary_KilledAfterCouponCommitsNeither(t *testing.T) {
	t.Parallel()
	db := testenv.NewMigratedSchema(t)
	ctx := context.Background()
	now := testNow()
	kinds := []notification.Kind{notification.AnniversaryCoupon}
	if err := jobs.Seed(ctx, db.Pool, now, 2, kinds); err != nil {
		t.Fatal(err)
	}
	res := runHelper(t, db, now, kinds, killpoint.EnvVar+"="+killpoint.JobAfterCoupon)
	if !strings.Contains(res.stderr, "KILLPOINT "+killpoint.JobAfterCoupon+" hit 1") || res.exitErr == nil {
		t.Fatalf("kill-point did not fire (err=%v):\n%s", res.exitErr, res.stderr)
	}
	if c, k := couponIDs(t, db.Pool), dedupKeys(t, db.Pool); len(c) != 0 || len(k) != 0 {
		t.Fatalf("killed job left coupons %v and outbox rows %v", c, k)
	}
	st, err := newRunner(db.Pool, now, &testenv.AlertRecorder{}).Run(ctx, kinds)
	if err != nil {
		t.Fatal(err)
	}
	if st.Inserted != 2 || len(couponIDs(t, db.Pool)) != 2 || len(dedupKeys(t, db.Pool)) != 2 {
		t.Fatalf("re-run %+v: want both coupons issued and both notifications enqueued", st)
	}
}

// design §2 exception: the anniversary coupon is issued first; if the outbox
// insert then fails, the notification is lost on purpose (never twice) and
// an ANNIVERSARY_LOST alert names its dedup_key. The failpoint is armed in a
// child process so it cannot affect other tests.
func TestAnniversary_OutboxInsertFailureLosesMessageWithAlert(t *testing.T) {
	t.Parallel()
	db := testenv.NewMigratedSchema(t)
	ctx := context.Background()
	now := testNow()
	kinds := []notification.Kind{notification.AnniversaryCoupon}
	if err := jobs.Seed(ctx, db.Pool, now, 2, kinds); err != nil {
		t.Fatal(err)
	}
	// Only the first insert fails: member 1 loses its message, member 2
	// gets one.
	res := runHelper(t, db, now, kinds, killpoint.FailEnvVar+"="+killpoint.FailAnniversaryOutbox)
	if res.exitErr != nil {
		t.Fatalf("child failed: %v\nstdout:%s\nstderr:%s", res.exitErr, res.stdout, res.stderr)
	}
	if !strings.Contains(res.stderr, "FAILPOINT "+killpoint.FailAnniversaryOutbox+" hit 1") {
		t.Fatalf("failpoint did not fire:\n%s", res.stderr)
	}
	if res.stats == nil || res.stats.Lost != 1 || res.stats.Inserted != 1 {
		t.Fatalf("stats %+v, want 1 lost, 1 inserted", res.stats)
	}
	coupons := couponIDs(t, db.Pool)
	if len(coupons) != 2 {
		t.Fatalf("coupons %v, want both issued", coupons)
	}
	lostKey := fmt.Sprintf("ANNIVERSARY_COUPON:%d", coupons[1])
	keptKey := fmt.Sprintf("ANNIVERSARY_COUPON:%d", coupons[2])
	if keys := dedupKeys(t, db.Pool); len(keys) != 1 || keys[0] != keptKey {
		t.Fatalf("outbox %v, want only %s", keys, keptKey)
	}
	if len(res.alerts) != 1 {
		t.Fatalf("alerts %+v, want exactly one", res.alerts)
	}
	a := res.alerts[0]
	if a.Kind != history.AlertAnniversaryLost || a.DedupKey != lostKey || !strings.Contains(a.Reason, "injected") {
		t.Fatalf("alert %+v, want %s for %s", a, history.AlertAnniversaryLost, lostKey)
	}
	// A re-run does not re-issue the coupon nor resurrect the message: it is
	// lost, never sent twice.
	rec := &testenv.AlertRecorder{}
	st, err := newRunner(db.Pool, now, rec).Run(ctx, kinds)
	if err != nil {
		t.Fatal(err)
	}
	if st.Inserted != 0 || st.Lost != 0 || len(couponIDs(t, db.Pool)) != 2 || len(dedupKeys(t, db.Pool)) != 1 {
		t.Fatalf("re-run %+v changed coupons or outbox", st)
	}
}

// Without a failure the anniversary job issues a coupon and enqueues its
// message, no alert.
func TestAnniversary_HappyPathCouponAndRow(t *testing.T) {
	t.Parallel()
	db := testenv.NewMigratedSchema(t)
	ctx := context.Background()
	now := testNow()
	kinds := []notification.Kind{notification.AnniversaryCoupon}
	if err := jobs.Seed(ctx, db.Pool, now, 3, kinds); err != nil {
		t.Fatal(err)
	}
	rec := &testenv.AlertRecorder{}
	st, err := newRunner(db.Pool, now, rec).Run(ctx, kinds)
	if err != nil {
		t.Fatal(err)
	}
	if st.Inserted != 3 || st.Lost != 0 || len(rec.All()) != 0 {
		t.Fatalf("stats %+v alerts %+v", st, rec.All())
	}
	coupons := couponIDs(t, db.Pool)
	keys := dedupKeys(t, db.Pool)
	for m := int64(1); m <= 3; m++ {
		want := fmt.Sprintf("ANNIVERSARY_COUPON:%d", coupons[m])
		found := false
		for _, k := range keys {
			found = found || k == want
		}
		if !found {
			t.Errorf("no outbox row %s for member %d (have %v)", want, m, keys)
		}
	}
}

func TestSeed_RejectsNegativeCount(t *testing.T) {
	t.Parallel()
	db := testenv.NewMigratedSchema(t)
	if err := jobs.Seed(context.Background(), db.Pool, testNow(), -1, nil); err == nil {
		t.Fatal("negative per-kind accepted")
	}
}
