package cleanup_test

import (
	"context"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/outboxchaos/outboxchaos/history"
	"github.com/outboxchaos/outboxchaos/system/canary"
	"github.com/outboxchaos/outboxchaos/system/cleanup"
	"github.com/outboxchaos/outboxchaos/system/clock"
	"github.com/outboxchaos/outboxchaos/system/config"
	"github.com/outboxchaos/outboxchaos/system/inbox"
	"github.com/outboxchaos/outboxchaos/system/testenv"
)

func testConfig(db *testenv.DB, instance string) config.Config {
	c := config.Default()
	c.PGURL, c.Prefix, c.Instance = db.URL, db.Schema, instance
	c.SendingTimeout = 500 * time.Millisecond
	c.CleanupLockTTL = time.Minute
	return c
}

func claimAt(t *testing.T, db *testenv.DB, mid string, outboxID int64, at time.Time) {
	t.Helper()
	won, err := inbox.TryClaim(context.Background(), db.Pool, inbox.Claim{MessageID: mid, OutboxID: outboxID,
		DedupKey: "GRADE_RENEWAL:" + mid, Kind: "GRADE_RENEWAL", Phone: "01000000001"}, at)
	if err != nil || !won {
		t.Fatalf("claim %s: %v %v", mid, won, err)
	}
}

func statuses(t *testing.T, db *testenv.DB) map[string]string {
	t.Helper()
	rows, err := inbox.All(context.Background(), db.Pool)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, r := range rows {
		out[r.MessageID] = r.Status
	}
	return out
}

// design §5 / §6 case 8: SENDING rows older than the SENDING timeout become
// ERROR with a SENDING_TIMEOUT alert naming the message; younger SENDING
// rows and finished rows are untouched.
func TestRunOnce_OldSendingBecomesErrorWithAlert(t *testing.T) {
	t.Parallel()
	db := testenv.NewMigratedSchema(t)
	ctx := context.Background()
	clk := clock.NewVirtual(clock.At(time.Now(), 10, 0), 0)
	now := clk.Now()
	claimAt(t, db, "old", 1, now.Add(-time.Second))
	claimAt(t, db, "young", 2, now.Add(-100*time.Millisecond))
	claimAt(t, db, "sent", 3, now.Add(-time.Hour))
	if _, err := inbox.Finish(ctx, db.Pool, "sent", history.InboxSent, "1000", "", now); err != nil {
		t.Fatal(err)
	}
	rec := &testenv.AlertRecorder{}
	c := cleanup.New(testConfig(db, "cleanup-a"), db.Pool, clk, rec, slog.New(slog.DiscardHandler))
	n, err := c.RunOnce(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if n != 1 {
		t.Fatalf("%d rows expired, want 1", n)
	}
	want := map[string]string{"old": history.InboxError, "young": history.InboxSending, "sent": history.InboxSent}
	if got := statuses(t, db); len(got) != 3 || got["old"] != want["old"] || got["young"] != want["young"] || got["sent"] != want["sent"] {
		t.Fatalf("statuses %v, want %v", got, want)
	}
	a := rec.All()
	if len(a) != 1 || a[0].Kind != history.AlertSendingTimeout || a[0].MessageID != "old" || a[0].OutboxID != 1 || a[0].DedupKey == "" {
		t.Fatalf("alerts %+v", a)
	}
	// A late vendor result for the expired claim does not overwrite ERROR.
	if ok, err := inbox.Finish(ctx, db.Pool, "old", history.InboxSent, "1000", "", now); err != nil || ok {
		t.Fatalf("late result written: %v %v", ok, err)
	}
	// Once the young row is old enough, the next run (the lock was
	// released by the first) expires it too.
	clk.Set(now.Add(time.Second))
	if n, err := c.RunOnce(ctx); err != nil || n != 1 {
		t.Fatalf("second run: %d %v", n, err)
	}
	if got := statuses(t, db)["young"]; got != history.InboxError {
		t.Fatalf("young row %s after its timeout", got)
	}
}

// design §5: one cleanup at a time across instances. Concurrent TryLocks:
// exactly one wins; the lock frees when it expires or its owner unlocks.
func TestTryLock_OnlyOneConcurrentHolder(t *testing.T) {
	t.Parallel()
	db := testenv.NewMigratedSchema(t)
	ctx := context.Background()
	now := clock.At(time.Now(), 10, 0)
	const n = 8
	owners := []string{"a", "b", "c", "d", "e", "f", "g", "h"}
	var wg sync.WaitGroup
	got := make([]bool, n)
	start := make(chan struct{})
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			ok, err := cleanup.TryLock(ctx, db.Pool, cleanup.LockName, owners[i], now, time.Minute)
			if err != nil {
				t.Error(err)
			}
			got[i] = ok
		}()
	}
	close(start)
	wg.Wait()
	holder := ""
	for i, ok := range got {
		if ok {
			if holder != "" {
				t.Fatalf("both %s and %s hold the cleanup lock", holder, owners[i])
			}
			holder = owners[i]
		}
	}
	if holder == "" {
		t.Fatal("nobody got the lock")
	}
	other := "zz"
	// Still held a second before expiry.
	if ok, _ := cleanup.TryLock(ctx, db.Pool, cleanup.LockName, other, now.Add(59*time.Second), time.Minute); ok {
		t.Fatal("lock taken while held")
	}
	// Unlock by a non-owner does nothing.
	if err := cleanup.Unlock(ctx, db.Pool, cleanup.LockName, other, now); err != nil {
		t.Fatal(err)
	}
	if ok, _ := cleanup.TryLock(ctx, db.Pool, cleanup.LockName, other, now.Add(time.Second), time.Minute); ok {
		t.Fatal("a non-owner's unlock released the lock")
	}
	// Expired: free for another.
	if ok, _ := cleanup.TryLock(ctx, db.Pool, cleanup.LockName, other, now.Add(time.Minute), time.Minute); !ok {
		t.Fatal("expired lock not taken")
	}
	// Released by its owner: free at once.
	if err := cleanup.Unlock(ctx, db.Pool, cleanup.LockName, other, now.Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	if ok, _ := cleanup.TryLock(ctx, db.Pool, cleanup.LockName, holder, now.Add(time.Minute), time.Minute); !ok {
		t.Fatal("released lock not taken")
	}
}

// Two cleanup instances running at once: only the lock holder sweeps, so
// each stuck claim is turned into ERROR and alerted exactly once.
func TestRunOnce_ConcurrentCleanupsSweepOnce(t *testing.T) {
	t.Parallel()
	db := testenv.NewMigratedSchema(t)
	ctx := context.Background()
	clk := clock.NewVirtual(clock.At(time.Now(), 10, 0), 0)
	now := clk.Now()
	for i, mid := range []string{"m1", "m2", "m3"} {
		claimAt(t, db, mid, int64(i+1), now.Add(-time.Hour))
	}
	rec := &testenv.AlertRecorder{}
	log := slog.New(slog.DiscardHandler)
	a := cleanup.New(testConfig(db, "cleanup-a"), db.Pool, clk, rec, log)
	b := cleanup.New(testConfig(db, "cleanup-b"), db.Pool, clk, rec, log)
	var wg sync.WaitGroup
	counts := make([]int, 2)
	for i, c := range []*cleanup.Cleanup{a, b} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			n, err := c.RunOnce(ctx)
			if err != nil {
				t.Error(err)
			}
			counts[i] = n
		}()
	}
	wg.Wait()
	if counts[0]+counts[1] != 3 {
		t.Fatalf("swept %v, want 3 in all", counts)
	}
	if n := len(rec.All()); n != 3 {
		t.Fatalf("%d alerts, want 3", n)
	}
}

// A cleanup that does not get the lock sweeps nothing.
func TestRunOnce_WithoutLockDoesNothing(t *testing.T) {
	t.Parallel()
	db := testenv.NewMigratedSchema(t)
	ctx := context.Background()
	clk := clock.NewVirtual(clock.At(time.Now(), 10, 0), 0)
	now := clk.Now()
	claimAt(t, db, "old", 1, now.Add(-time.Hour))
	if ok, err := cleanup.TryLock(ctx, db.Pool, cleanup.LockName, "elsewhere", now, time.Minute); err != nil || !ok {
		t.Fatal(err)
	}
	rec := &testenv.AlertRecorder{}
	c := cleanup.New(testConfig(db, "cleanup-a"), db.Pool, clk, rec, slog.New(slog.DiscardHandler))
	if n, err := c.RunOnce(ctx); err != nil || n != 0 {
		t.Fatalf("run without the lock: %d %v", n, err)
	}
	if got := statuses(t, db)["old"]; got != history.InboxSending || len(rec.All()) != 0 {
		t.Fatalf("row %s, %d alerts: the lock was ignored", got, len(rec.All()))
	}
	clk.Set(now.Add(time.Minute))
	if n, err := c.RunOnce(ctx); err != nil || n != 1 {
		t.Fatalf("after the lock expired: %d %v", n, err)
	}
}

// sweepThree strands three claims past the SENDING timeout and runs one
// sweep of c over them: all three are ERROR after it, whatever c alerts.
func sweepThree(t *testing.T, db *testenv.DB, c *cleanup.Cleanup, now time.Time) {
	t.Helper()
	for i, mid := range []string{"a", "b", "c"} {
		claimAt(t, db, mid, int64(i+1), now.Add(-time.Duration(i+1)*time.Second))
	}
	n, err := c.RunOnce(context.Background())
	if err != nil || n != 3 {
		t.Fatalf("one sweep over three stranded claims: %d %v, want 3", n, err)
	}
	for mid, st := range statuses(t, db) {
		if st != history.InboxError {
			t.Fatalf("row %s is %s after the sweep, want ERROR", mid, st)
		}
	}
}

// design §5: every row one sweep turns into ERROR gets its own
// SENDING_TIMEOUT alert, not only the first.
func TestRunOnce_EveryRowOfOneSweepAlerted(t *testing.T) {
	t.Parallel()
	db := testenv.NewMigratedSchema(t)
	clk := clock.NewVirtual(clock.At(time.Now(), 10, 0), 0)
	rec := &testenv.AlertRecorder{}
	sweepThree(t, db, cleanup.New(testConfig(db, "cleanup-a"), db.Pool, clk, rec, slog.New(slog.DiscardHandler)), clk.Now())
	got := map[string]int{}
	for _, a := range rec.All() {
		if a.Kind != history.AlertSendingTimeout {
			t.Fatalf("alert %+v", a)
		}
		got[a.MessageID]++
	}
	if len(got) != 3 || got["a"] != 1 || got["b"] != 1 || got["c"] != 1 {
		t.Fatalf("alerts by message %v, want a, b and c once each", got)
	}
}

// The AlertFirstStranded canary is chosen when the cleanup is built and
// alerts only the first row of the sweep: the other two are ERROR without
// an alert. Not parallel: the canary is process-wide.
func TestAlertFirstStrandedCanary(t *testing.T) {
	t.Cleanup(func() { _ = canary.Arm("") })
	db := testenv.NewMigratedSchema(t)
	clk := clock.NewVirtual(clock.At(time.Now(), 10, 0), 0)
	if err := canary.Arm(canary.AlertFirstStranded); err != nil {
		t.Fatal(err)
	}
	rec := &testenv.AlertRecorder{}
	c := cleanup.New(testConfig(db, "cleanup-a"), db.Pool, clk, rec, slog.New(slog.DiscardHandler))
	_ = canary.Arm("")
	sweepThree(t, db, c, clk.Now())
	if a := rec.All(); len(a) != 1 {
		t.Fatalf("%d alerts with the canary armed, want 1 (the first row only): %+v", len(a), a)
	}
}
