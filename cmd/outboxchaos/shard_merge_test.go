package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/outboxchaos/outboxchaos/reports"
	"github.com/outboxchaos/outboxchaos/scenarios/explore"
	"github.com/outboxchaos/outboxchaos/system/testenv"
)

// The test's budget: four schedules of a seed that, in each of the two
// shards, draws one held pair or stale actor, so the drawn counts
// compared are not all zero and each shard adds to them.
const (
	shardMergeSeed   = 6
	shardMergeChecks = 4
)

// TestShardMerge_EqualsTheWholeRun proves that a budget explored as shards
// and folded by `ledger merge` records what the same budget explored by
// one runner records, on everything its seed alone decides: the
// schedules judged, the violations (none), each invariant's counts, the
// seed, and the held pairs and stale actors the schedules drew. The
// budget runs three times against the real services: whole, then as
// shards 1/2 and 2/2, each writing a ledger of its own.
func TestShardMerge_EqualsTheWholeRun(t *testing.T) {
	testenv.Require(t)
	t.Parallel()
	bin := binary(t)
	dir := t.TempDir()
	whole, s1, s2, merged := filepath.Join(dir, "whole.jsonl"), filepath.Join(dir, "s1.jsonl"), filepath.Join(dir, "s2.jsonl"), filepath.Join(dir, "merged.jsonl")

	// One after the other, not at once: each runs two schedules at a time.
	exploreBudget(t, bin, "--ledger", whole)
	exploreBudget(t, bin, "--shard", "1/2", "--ledger", s1)
	exploreBudget(t, bin, "--shard", "2/2", "--ledger", s2)
	if code, stdout, stderr := runCLI(t, "ledger", "merge", "--out", merged, s1, s2); code != 0 {
		t.Fatalf("ledger merge: exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}

	// The shards split the budget: two schedules each.
	for i, path := range []string{s1, s2} {
		if e := onlyEntry(t, path); e.Shard != strconv.Itoa(i+1)+"/2" || e.Count != shardMergeChecks/2 {
			t.Errorf("%s: shard %q with %d schedules, want %d/2 with %d", filepath.Base(path), e.Shard, e.Count, i+1, shardMergeChecks/2)
		}
	}
	we, me := onlyEntry(t, whole), onlyEntry(t, merged)
	if we.Shard != "" || me.Shard != "" || we.What != reports.LedgerSchedules || me.What != we.What ||
		we.Seed != shardMergeSeed || me.Seed != we.Seed {
		t.Errorf("whole run: %s shard %q seed %d; merged: %s shard %q seed %d; want schedules, no shard, seed %d in both",
			we.What, we.Shard, we.Seed, me.What, me.Shard, me.Seed, shardMergeSeed)
	}

	// The ledger's totals, as the report reads them.
	wt, mt := ledgerTotals(t, whole), ledgerTotals(t, merged)
	k := reports.LedgerSchedules
	if wt.Count[k] != shardMergeChecks || mt.Count[k] != wt.Count[k] {
		t.Errorf("schedules: whole run %d, merged %d; want %d in both", wt.Count[k], mt.Count[k], shardMergeChecks)
	}
	if wt.Violations[k] != 0 || mt.Violations[k] != 0 {
		t.Errorf("violations: whole run %d, merged %d; want 0 in both", wt.Violations[k], mt.Violations[k])
	}
	// Every invariant judges every judged run (the harness's record is
	// there in each), so with every run judged its counts are the
	// seed's too.
	for name, c := range wt.Invariants {
		if c.Judged != shardMergeChecks || c.Broken != 0 || c.Violations != 0 {
			t.Errorf("invariant %s in the whole run: %+v, want %d judged and nothing broken", name, c, shardMergeChecks)
		}
	}
	if len(wt.Invariants) == 0 || !reflect.DeepEqual(wt.Invariants, mt.Invariants) {
		t.Errorf("invariant counts differ:\nwhole run: %+v\nmerged:    %+v", wt.Invariants, mt.Invariants)
	}

	// Coverage: only what was drawn. Single, Pairs, FamilyPairs and the
	// held / held-with counts of Held are fired evidence (whether a fault
	// fired, and what the pipeline logged while it was in place): they
	// depend on timing and may differ between two runs of one schedule,
	// so they are not compared.
	if wt.Coverage == nil || mt.Coverage == nil {
		t.Fatalf("no coverage: whole run %v, merged %v", wt.Coverage, mt.Coverage)
	}
	if wt.Coverage.Schedules != shardMergeChecks || mt.Coverage.Schedules != wt.Coverage.Schedules {
		t.Errorf("coverage schedules: whole run %d, merged %d; want %d in both", wt.Coverage.Schedules, mt.Coverage.Schedules, shardMergeChecks)
	}
	// What the budget's schedules draw, from the seed alone, with no run.
	want := explore.NewCoverage()
	for i := range shardMergeChecks {
		s, _, err := explore.Budget{Seed: shardMergeSeed}.Schedule(i)
		if err != nil {
			t.Fatal(err)
		}
		want.AddHeld(s, nil)
	}
	drawn := heldDrawn(want)
	if len(drawn) == 0 {
		t.Fatalf("the budget of seed %d draws no held pair or stale actor: the comparison below would be vacuous", shardMergeSeed)
	}
	if got := heldDrawn(wt.Coverage); !reflect.DeepEqual(got, drawn) {
		t.Errorf("held pairs and stale actors drawn in the whole run %v, the seed draws %v", got, drawn)
	}
	if got := heldDrawn(mt.Coverage); !reflect.DeepEqual(got, drawn) {
		t.Errorf("held pairs and stale actors drawn, merged %v, the seed draws %v", got, drawn)
	}
}

// exploreBudget runs the test's budget with the built binary (its pods
// are that binary: the test binary cannot be one), against the test
// services, its records and working folder in the test's temporary
// folders; every schedule must be judged and pass (exit 0).
func exploreBudget(t *testing.T, bin string, args ...string) {
	t.Helper()
	ctx := t.Context()
	if d, ok := t.Deadline(); ok {
		// Leave the run time to clean up before go test's own timeout:
		// a guard against a hang, no verdict on speed.
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, d.Add(-30*time.Second))
		defer cancel()
	}
	all := append([]string{"explore", "--checks", strconv.Itoa(shardMergeChecks), "--seed", strconv.Itoa(shardMergeSeed),
		"--parallel", "2", "--artifacts", t.TempDir()}, args...)
	cmd := exec.CommandContext(ctx, bin, all...)
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) } // explore cleans up on SIGTERM
	cmd.WaitDelay = time.Minute
	cmd.Dir = t.TempDir()
	cmd.Env = append(os.Environ(), "OUTBOXCHAOS_PG_URL="+testenv.PGURL(), "OUTBOXCHAOS_AMQP_URL="+testenv.AMQPURL())
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s: %v\nstdout:\n%s\nstderr:\n%s", strings.Join(all, " "), err, stdout.String(), stderr.String())
	}
}

// onlyEntry is the one entry of the ledger at path.
func onlyEntry(t *testing.T, path string) reports.Exploration {
	t.Helper()
	es, err := reports.ReadLedgerFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(es) != 1 {
		t.Fatalf("%s holds %d entries, want 1: %+v", filepath.Base(path), len(es), es)
	}
	return es[0]
}

// ledgerTotals sums the ledger at path.
func ledgerTotals(t *testing.T, path string) reports.LedgerTotals {
	t.Helper()
	tot, err := reports.ReadLedger(path)
	if err != nil {
		t.Fatal(err)
	}
	return tot
}

// heldDrawn is the drawn counts of c.Held (explore.HeldDrawn), by key.
func heldDrawn(c *explore.Coverage) map[string]int {
	out := map[string]int{}
	for k, v := range c.Held {
		if strings.HasSuffix(k, explore.HeldDrawn) {
			out[k] = v
		}
	}
	return out
}
