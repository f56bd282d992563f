package main

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/outboxchaos/outboxchaos/reports"
)

// `ledger merge` folds the shard ledgers of one budget, written by two
// runners, into one entry with the budget's count; a budget with a shard
// missing is a usage error naming it, as are no ledgers at all.
func TestLedgerMerge(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	write := func(name, shard string, count, viol int) string {
		p := filepath.Join(dir, name)
		e := `{"at":"2026-12-06T01:00:00Z","commit":"abc","what":"schedules","count":` + strconv.Itoa(count) + `,"violations":` + strconv.Itoa(viol) +
			`,"seed":9,"shard":"` + shard + `"}` + "\n"
		if err := os.WriteFile(p, []byte(e), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	a, b := write("a.jsonl", "1/2", 50, 1), write("b.jsonl", "2/2", 50, 0)
	out := filepath.Join(dir, "merged", "explored.jsonl")
	if code, _, stderr := runCLI(t, "ledger", "merge", "--out", out, a, b); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	es, err := reports.ReadLedgerFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if len(es) != 1 || es[0].Count != 100 || es[0].Violations != 1 || es[0].Shard != "" {
		t.Errorf("merged %+v", es)
	}
	if code, _, stderr := runCLI(t, "ledger", "merge", a); code != 2 || !strings.Contains(stderr, "2/2") {
		t.Errorf("a missing shard: exit %d, %s", code, stderr)
	}
	if code, _, _ := runCLI(t, "ledger", "merge"); code != 2 {
		t.Errorf("no ledgers: exit %d", code)
	}
}
