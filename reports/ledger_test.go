package reports

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/outboxchaos/outboxchaos/checker"
	"github.com/outboxchaos/outboxchaos/scenarios/explore"
)

// TestLedgerSums: entries append and sum by kind; a missing ledger is
// empty; a corrupt line is an error naming it.
func TestLedgerSums(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "explored.jsonl")
	if tot, err := ReadLedger(path); err != nil || tot.Runs != 0 {
		t.Fatalf("missing ledger: %+v, %v", tot, err)
	}
	t0 := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	for _, e := range []Exploration{
		{At: t0.Add(time.Hour), What: LedgerSchedules, Count: 250, Shard: "1/8"},
		{At: t0, What: LedgerCrashPoints, Count: 748},
		{At: t0.Add(2 * time.Hour), What: LedgerSchedules, Count: 250, Violations: 1, Shard: "2/8"},
	} {
		if err := AppendLedger(path, e); err != nil {
			t.Fatal(err)
		}
	}
	tot, err := ReadLedger(path)
	if err != nil {
		t.Fatal(err)
	}
	if tot.Runs != 3 || tot.Count[LedgerSchedules] != 500 || tot.Count[LedgerCrashPoints] != 748 ||
		tot.Violations[LedgerSchedules] != 1 || !tot.Since.Equal(t0) {
		t.Fatalf("totals %+v", tot)
	}
}

// TestLedgerSumsCoverage: the entries' coverage adds up, and the report
// renders it under "Explored so far".
func TestLedgerSumsCoverage(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "explored.jsonl")
	cov := explore.NewCoverage()
	cov.Add([]checker.FaultRecord{
		{Kind: "kill-point", Fired: true, At: time.Second, Detail: "kill-point relay.after-claim:1: died", Phases: []string{"claim"}},
		{Kind: "down", Fired: true, At: time.Second, Detail: "down postgres: refused", Windowed: true},
	}, nil)
	for _, e := range []Exploration{
		{At: time.Now(), What: LedgerSchedules, Count: 1, Coverage: cov},
		{At: time.Now(), What: LedgerSchedules, Count: 1, Coverage: cov},
		{At: time.Now(), What: LedgerCrashPoints, Count: 5},
	} {
		if err := AppendLedger(path, e); err != nil {
			t.Fatal(err)
		}
	}
	tot, err := ReadLedger(path)
	if err != nil {
		t.Fatal(err)
	}
	if tot.Coverage == nil || tot.Coverage.Schedules != 2 || tot.Coverage.Single["kill-point@claim"] != 2 ||
		tot.Coverage.FamilyPairs["down + kill-point"] != 2 {
		t.Fatalf("coverage %+v", tot.Coverage)
	}
	var b strings.Builder
	writeExplored(func(f string, a ...any) { fmt.Fprintf(&b, f, a...) }, tot)
	if !strings.Contains(b.String(), "Fault coverage, by fired evidence") || !strings.Contains(b.String(), "| kill-point | · | 2 |") {
		t.Errorf("rendered:\n%s", b.String())
	}
}

// TestLedgerLongLine: an entry past bufio's 64 KiB default line (coverage
// and the keys of the branches reached) reads back whole.
func TestLedgerLongLine(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "explored.jsonl")
	var keys []string
	for i := range 1000 {
		keys = append(keys, fmt.Sprintf("relay/relay.go:Relay.RunOnce#%d:%s", i+2, strings.Repeat("x", 80)))
	}
	if err := AppendLedger(path, Exploration{At: time.Now(), What: LedgerSchedules, Count: 1, Branches: &BranchCount{Reached: 1000, Total: 1000, Keys: keys}}); err != nil {
		t.Fatal(err)
	}
	tot, err := ReadLedger(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(tot.BranchesEver) != 1000 {
		t.Fatalf("%d keys read back", len(tot.BranchesEver))
	}
}
