package reports

import (
	"fmt"
	"strings"

	"github.com/outboxchaos/outboxchaos/branches"
)

// writeBranches renders the map of the error branches of system/ the
// report's runs reached (issue 22, part 5), split by what became of each:
// reached, not reached with a reason no fault can reach it
// (branches/unreachable.tsv), or open — reachable by a fault, not reached:
// the fault search's to-do, listed one by one.
func writeBranches(p func(string, ...any), m *branches.Map) {
	if m == nil {
		return
	}
	if m.Explained == nil {
		if rs, err := branches.Reasons(); err == nil {
			_ = m.Explain(rs) // stale entries fail branches.TestReasonsMatchSource
		}
	}
	pkgs := m.ByPackage()
	var reached, total, open int
	byClass := map[string]int{}
	var wrong []string
	for _, pkg := range pkgs {
		reached += pkg.Reached
		total += pkg.Total
		open += len(pkg.Open)
		for c, n := range pkg.ByClass(m) {
			byClass[c] += n
		}
		for _, b := range pkg.ReachedListed {
			wrong = append(wrong, fmt.Sprintf("`%s` %s (line %d of `%s`)", branchAt(pkg, b), b.Func, m.Explained[b.ID()].Line, branches.ReasonsFile))
		}
	}
	explained := total - reached - open
	var classes []string
	for _, c := range branches.Classes {
		if byClass[c] > 0 {
			classes = append(classes, fmt.Sprintf("%s %d", c, byClass[c]))
		}
	}
	p("## Error branches reached\n\nEvery error-handling branch of `system/` (an `if` on an error, `errors.Is`/`As`, a `case` on a context's end; `system/testenv` left out) and whether a named scenario, random schedule or crash point of this report executed it (the canaries, deliberately broken, do not count): the pods run a binary built with `go build -cover` (`make cover-bin`) and write their counters to `GOCOVERDIR`, merged with `go tool covdata`. A pod killed from outside (SIGKILL) loses the counters of its last life; a pod dying at a kill-point writes them first. "+
		"A branch not reached is either listed in [`%s`](../%s) with the reason no fault can reach it (input: only a malformed setting; not-in-pods: harness-side code no pod's counters see; defensive: cannot fail; no-fault: needs a fault the harness does not inject), or open: a fault the harness has could reach it and none did yet — the to-do of the fault search, listed below. "+
		"**%d of %d reached (%.0f %%); %d not reached with a reason (%s); %d open.**\n\n",
		branches.ReasonsFile, branches.ReasonsFile, reached, total, pct(reached, total), explained, strings.Join(classes, ", "), open)
	p("| package | branches | reached | not reached, with a reason | open |\n|---|---:|---:|---:|---:|\n")
	for _, pkg := range pkgs {
		p("| `%s` | %d | %d | %d | %d |\n", shortPkg(pkg.Pkg), pkg.Total, pkg.Reached, len(pkg.Explained), len(pkg.Open))
	}
	p("| **all** | **%d** | **%d** | **%d** | **%d** |\n\n", total, reached, explained, open)
	if len(wrong) > 0 {
		p("Reached although `%s` says no fault can reach them (the reason is wrong: fix the file): %s.\n\n", branches.ReasonsFile, strings.Join(wrong, ", "))
	}
	if open > 0 {
		p("Open branches, by package (file:line at this commit, function):\n\n")
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
