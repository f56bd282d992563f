package reports

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/outboxchaos/outboxchaos/branches"
)

// The section splits the branches into reached, not reached with a reason
// and open, the figures add up, each open branch is listed, and a reached
// branch the reasons file calls unreachable is called out.
func TestWriteBranchesReasons(t *testing.T) {
	pkg := "github.com/outboxchaos/outboxchaos/system/relay"
	mk := func(line int, fn, guard string) branches.Branch {
		return branches.Branch{Pkg: pkg, File: pkg + "/relay.go", Line: line, Func: fn, Kind: branches.KindErr, Guard: guard}
	}
	bs := []branches.Branch{mk(10, "A", "x()"), mk(20, "B", "json.Marshal(v)"), mk(30, "C", "tx.Commit(ctx)"), mk(40, "D", "url.Parse(s)")}
	m := &branches.Map{Branches: bs, Instrumented: map[string]bool{pkg + "/relay.go": true},
		Reached: map[string]bool{bs[0].ID(): true, bs[3].ID(): true}}
	rs, err := branches.ParseReasons("relay/relay.go\tB\tjson.Marshal\tdefensive\tcannot fail\nrelay/relay.go\tD\t*\tinput\tonly a bad URL\n")
	if err != nil {
		t.Fatal(err)
	}
	if errs := m.Explain(rs); len(errs) != 0 {
		t.Fatal(errs)
	}
	var sb strings.Builder
	writeBranches(func(f string, a ...any) { fmt.Fprintf(&sb, f, a...) }, m, LedgerTotals{})
	out := sb.String()
	for _, want := range []string{
		"**2 of 4 reached by this report's runs (50 %), 2 reached ever (50 %); 1 never reached, with a reason (defensive 1); 1 open.**",
		"| `system/relay` | 4 | 2 | 2 | 1 | 1 |",
		"| **all** | **4** | **2** | **2** | **1** | **1** |",
		"- `system/relay`: `relay.go:30` C",
		"`relay.go:40` D (line 2 of `branches/unreachable.tsv`; reached by this report's runs)",
		"[`branches/unreachable.tsv`]",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("missing %q in\n%s", want, out)
		}
	}
}

// The union over a hand-made ledger: a count-only line (written before the
// ledger named branches) adds nothing, a key whose branch is no longer in
// the source is dropped and said so, a branch reached only by an earlier
// exploration counts as reached ever and leaves the open list, and a
// listed branch an exploration reached is called a wrong reason, naming
// that exploration; ever + with a reason + open = total.
func TestWriteBranchesLedgerUnion(t *testing.T) {
	t.Parallel()
	pkg := "github.com/outboxchaos/outboxchaos/system/relay"
	mk := func(line int, fn, guard string) branches.Branch {
		return branches.Branch{Pkg: pkg, File: pkg + "/relay.go", Line: line, Func: fn, Kind: branches.KindErr, Guard: guard}
	}
	bs := []branches.Branch{mk(10, "A", "x()"), mk(20, "B", "json.Marshal(v)"), mk(30, "C", "tx.Commit(ctx)"), mk(40, "D", "url.Parse(s)"), mk(50, "E", "rows.Err()")}
	inst := map[string]bool{pkg + "/relay.go": true}
	rs, err := branches.ParseReasons("relay/relay.go\tB\tjson.Marshal\tdefensive\tcannot fail\nrelay/relay.go\tD\t*\tinput\tonly a bad URL\n")
	if err != nil {
		t.Fatal(err)
	}

	path := filepath.Join(t.TempDir(), "explored.jsonl")
	old := `{"at":"2026-12-01T10:00:00Z","commit":"0ld0000","what":"schedules","count":2000,"violations":0,"seed":2,"branches":{"reached":4,"total":5}}` + "\n"
	if err := os.WriteFile(path, []byte(old), 0o644); err != nil {
		t.Fatal(err)
	}
	t1 := time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)
	// An exploration at an older commit reached B, C and a branch since
	// removed from the source.
	if err := AppendLedger(path, Exploration{At: t1, Commit: "c1", What: LedgerSchedules, Count: 20,
		Branches: &BranchCount{Reached: 3, Total: 6, Keys: []string{"relay/relay.go:B:json.Marshal(v)", "relay/relay.go:C:tx.Commit(ctx)", "relay/relay.go:Gone:err != nil"}}}); err != nil {
		t.Fatal(err)
	}
	// A later one, written as explore writes it, reached B again.
	later := &branches.Map{Branches: bs, Instrumented: inst, Reached: map[string]bool{bs[1].ID(): true}}
	if err := AppendLedger(path, Exploration{At: t1.Add(time.Hour), Commit: "c2", What: LedgerSchedules, Count: 4, Branches: CountBranches(later)}); err != nil {
		t.Fatal(err)
	}
	tot, err := ReadLedger(path)
	if err != nil {
		t.Fatal(err)
	}
	if tot.Runs != 3 || tot.BranchRuns != 2 || len(tot.BranchesEver) != 3 || tot.BranchesEver["relay/relay.go:B:json.Marshal(v)"].Commit != "c2" ||
		tot.Branches.Commit != "0ld0000" {
		t.Fatalf("totals: runs %d, branch runs %d, ever %v, most %+v", tot.Runs, tot.BranchRuns, tot.BranchesEver, tot.Branches)
	}

	// This report reached A only.
	m := &branches.Map{Branches: bs, Instrumented: inst, Reached: map[string]bool{bs[0].ID(): true}}
	if errs := m.Explain(rs); len(errs) != 0 {
		t.Fatal(errs)
	}
	var sb strings.Builder
	writeBranches(func(f string, a ...any) { fmt.Fprintf(&sb, f, a...) }, m, tot)
	out := sb.String()
	for _, want := range []string{
		"**1 of 5 reached by this report's runs (20 %), 3 reached ever (60 %); 1 never reached, with a reason (input 1); 1 open.**",
		"| `system/relay` | 5 | 1 | 3 | 1 | 1 |",
		"| **all** | **5** | **1** | **3** | **1** | **1** |",
		"the source no longer has (the code changed: the branch went, moved to another function or its guard was edited), counted for nothing: 1.",
		"`relay.go:20` B (line 1 of `branches/unreachable.tsv`; reached last by the exploration at c2, 2026-12-02)",
		"- `system/relay`: `relay.go:50` E\n",
		"2 of its entries name the branches they reached",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("missing %q in\n%s", want, out)
		}
	}
	if strings.Contains(out, "`relay.go:30`") || strings.Contains(out, "line 2 of") {
		t.Errorf("C, reached earlier, is listed open, or D, never reached, as a wrong reason:\n%s", out)
	}
	if m.Earlier != nil {
		t.Error("writeBranches changed the caller's map")
	}
}
