package reports

import (
	"path/filepath"
	"testing"
	"time"
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
	for _, e := range []LedgerEntry{
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
