package reports

import (
	"fmt"
	"strings"

	"github.com/outboxchaos/outboxchaos/branches"
)

// writeBranches renders the map of the error branches of system/ (issue
// 22, part 5): which ones the report's runs reached, which ones were
// reached ever — by them or by an exploration of the ledger t that named
// the branches it reached (LedgerTotals.BranchesEver), as long as the
// source still has the branch — and what became of the others: never
// reached with a reason no fault can reach them
// (branches/unreachable.tsv), or open — reachable by a fault, never
// reached: the fault search's to-do, listed one by one.
func writeBranches(p func(string, ...any), m *branches.Map, t LedgerTotals) {
	if m == nil {
		return
	}
	mm := *m // the caller's map keeps its own Earlier
	m = &mm
	if m.Explained == nil {
		if rs, err := branches.Reasons(); err == nil {
			_ = m.Explain(rs) // stale entries fail branches.TestReasonsMatchSource
		}
	}
	m.Earlier = nil
	gone := m.AddEarlier(t.EverKeys())
	pkgs := m.ByPackage()
	var reached, ever, total, open int
	byClass := map[string]int{}
	var wrong []string
	keys := branches.Keys(m.Branches)
	for _, pkg := range pkgs {
		reached += pkg.Reached
		ever += pkg.Ever
		total += pkg.Total
		open += len(pkg.Open)
		for c, n := range pkg.ByClass(m) {
			byClass[c] += n
		}
		for _, b := range pkg.ReachedListed {
			by := "by this report's runs"
			if !m.Reached[b.ID()] {
				s := t.BranchesEver[keys[b.ID()]]
				by = fmt.Sprintf("last by the exploration at %s, %s", s.Commit, s.At.Format("2006-01-02"))
			}
			wrong = append(wrong, fmt.Sprintf("`%s` %s (line %d of `%s`; reached %s)", branchAt(pkg, b), b.Func, m.Explained[b.ID()].Line, branches.ReasonsFile, by))
		}
	}
	explained := total - ever - open
	var classes []string
	for _, c := range branches.Classes {
		if byClass[c] > 0 {
			classes = append(classes, fmt.Sprintf("%s %d", c, byClass[c]))
		}
	}
	p("## Error branches reached\n\nEvery error-handling branch of `system/` (an `if` on an error, `errors.Is`/`As`, a `case` on a context's end; `system/testenv` left out) and whether a named scenario, random schedule or crash point of this report executed it (the canaries, deliberately broken, do not count): the pods run a binary built with `go build -cover` (`make cover-bin`) and write their counters to `GOCOVERDIR`, merged with `go tool covdata`. A pod killed from outside (SIGKILL) loses the counters of its last life; a pod dying at a kill-point writes them first. "+
		"Reached ever adds every branch an exploration of the ledger reached (`make report`, `explore --cover-dir --ledger`: %d of its entries name the branches they reached, by file, function and guard text rather than line, since the ledger began keeping them), as long as the source still has that branch. "+
		"A branch never reached is either listed in [`%s`](../%s) with the reason no fault can reach it (input: only a malformed setting; not-in-pods: harness-side code no pod's counters see; defensive: cannot fail; no-fault: needs a fault the harness does not inject), or open: a fault the harness has could reach it and none ever did — the to-do of the fault search, listed below. "+
		"**%d of %d reached by this report's runs (%.0f %%), %d reached ever (%.0f %%); %d never reached, with a reason (%s); %d open.**\n\n",
		t.BranchRuns, branches.ReasonsFile, branches.ReasonsFile, reached, total, pct(reached, total), ever, pct(ever, total), explained, strings.Join(classes, ", "), open)
	if len(gone) > 0 {
		p("Branches earlier explorations reached that the source no longer has (the code changed: the branch went, moved to another function or its guard was edited), counted for nothing: %d.\n\n", len(gone))
	}
	p("| package | branches | reached here | reached ever | never reached, with a reason | open |\n|---|---:|---:|---:|---:|---:|\n")
	for _, pkg := range pkgs {
		p("| `%s` | %d | %d | %d | %d | %d |\n", shortPkg(pkg.Pkg), pkg.Total, pkg.Reached, pkg.Ever, len(pkg.Explained), len(pkg.Open))
	}
	p("| **all** | **%d** | **%d** | **%d** | **%d** | **%d** |\n\n", total, reached, ever, explained, open)
	if len(wrong) > 0 {
		p("Reached although `%s` says no fault can reach them (the reason is wrong: fix the file): %s.\n\n", branches.ReasonsFile, strings.Join(wrong, ", "))
	}
	if open > 0 {
		p("Open branches, never reached by any run, by package (file:line at this commit, function):\n\n")
		for _, pkg := range pkgs {
			if len(pkg.Open) == 0 {
				continue
			}
			var bs []string
			for _, b := range pkg.Open {
				bs = append(bs, fmt.Sprintf("`%s` %s", branchAt(pkg, b), b.Func))
			}
			p("- `%s`: %s\n", shortPkg(pkg.Pkg), strings.Join(bs, ", "))
		}
		p("\n")
	}
}

// branchAt is a branch's file (in its package) and line.
func branchAt(pkg branches.Package, b branches.Branch) string {
	return fmt.Sprintf("%s:%d", strings.TrimPrefix(b.File, pkg.Pkg+"/"), b.Line)
}

// shortPkg is an import path from system/ on.
func shortPkg(pkg string) string {
	if i := strings.Index(pkg, "/system/"); i >= 0 {
		return pkg[i+1:]
	}
	return pkg
}

func pct(a, b int) float64 {
	if b == 0 {
		return 0
	}
	return 100 * float64(a) / float64(b)
}
