package reports

import (
	"bytes"
	"os"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/outboxchaos/outboxchaos/scenarios/explore"
)

// shardEntry is shard k/n of a budget of seed 7 at commit abc: count
// schedules, the coverage and invariant counts given, and branches.
func shardEntry(shard string, at int, count, viol int, single map[string]int, keys ...string) Exploration {
	cov := explore.NewCoverage()
	cov.Schedules = count
	for k, v := range single {
		cov.Single[k] = v
	}
	return Exploration{At: time.Date(2026, 12, 6, 1, at, 0, 0, time.UTC), Commit: "abc", What: LedgerSchedules, Seed: 7, Shard: shard,
		Count: count, Violations: viol, Coverage: cov, Branches: &BranchCount{Reached: len(keys), Total: 200, Keys: keys},
		Invariants: map[string]InvariantCount{"nothing-twice": {Judged: count, Broken: viol, Violations: 2 * viol}}}
}

// The shards of one budget fold into one entry whose counts are the sums
// and whose branches are the union, where its first shard was; other
// entries pass through; the ledger's totals are unchanged by the merge.
func TestMergeShards(t *testing.T) {
	t.Parallel()
	plain := Exploration{At: time.Date(2026, 12, 5, 0, 0, 0, 0, time.UTC), Commit: "abc", What: LedgerCrashPoints, Count: 30, Seed: 1}
	es := []Exploration{
		plain,
		shardEntry("2/3", 2, 33, 1, map[string]int{"down@claim": 4}, "b", "c"),
		shardEntry("1/3", 1, 34, 0, map[string]int{"down@claim": 1, "kill-point@send": 2}, "a", "b"),
		shardEntry("3/3", 3, 33, 0, nil, "d"),
	}
	got, err := MergeShards(es)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || !reflect.DeepEqual(got[0], plain) {
		t.Fatalf("merged %d entries: %+v", len(got), got)
	}
	m := got[1]
	if m.Shard != "" || m.Count != 100 || m.Violations != 1 || m.Seed != 7 || m.Commit != "abc" || m.At.Minute() != 3 {
		t.Errorf("merged entry %+v", m)
	}
	if m.Coverage.Schedules != 100 || m.Coverage.Single["down@claim"] != 5 || m.Coverage.Single["kill-point@send"] != 2 {
		t.Errorf("coverage %+v", m.Coverage)
	}
	if m.Branches.Reached != 4 || m.Branches.Total != 200 || strings.Join(m.Branches.Keys, ",") != "a,b,c,d" {
		t.Errorf("branches %+v", m.Branches)
	}
	if c := m.Invariants["nothing-twice"]; c != (InvariantCount{Judged: 100, Broken: 1, Violations: 2}) {
		t.Errorf("invariant counts %+v", c)
	}
	var before, after bytes.Buffer
	if err := WriteLedgerEntries(&before, es); err != nil {
		t.Fatal(err)
	}
	if err := WriteLedgerEntries(&after, got); err != nil {
		t.Fatal(err)
	}
	tb, ta := totalsOf(t, before.String()), totalsOf(t, after.String())
	if !reflect.DeepEqual(tb.Count, ta.Count) || !reflect.DeepEqual(tb.Violations, ta.Violations) || !reflect.DeepEqual(tb.Invariants, ta.Invariants) ||
		!reflect.DeepEqual(tb.Coverage, ta.Coverage) || len(tb.BranchesEver) != len(ta.BranchesEver) {
		t.Errorf("the merge changed the ledger's totals:\n%+v\n%+v", tb, ta)
	}
}

// A budget with a shard missing or recorded twice is not merged: its
// merge would not be the budget's totals.
func TestMergeShardsIncomplete(t *testing.T) {
	t.Parallel()
	for name, es := range map[string][]Exploration{
		"missing": {shardEntry("1/3", 1, 34, 0, nil), shardEntry("3/3", 3, 33, 0, nil)},
		"twice":   {shardEntry("1/2", 1, 50, 0, nil), shardEntry("1/2", 2, 50, 0, nil), shardEntry("2/2", 3, 50, 0, nil)},
	} {
		if _, err := MergeShards(es); err == nil || !strings.Contains(err.Error(), "seed 7") {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// totalsOf sums a ledger's text as ReadLedger does.
func totalsOf(t *testing.T, text string) LedgerTotals {
	t.Helper()
	path := t.TempDir() + "/ledger.jsonl"
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	tot, err := ReadLedger(path)
	if err != nil {
		t.Fatal(err)
	}
	return tot
}
