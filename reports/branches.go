package reports

import (
	"fmt"
	"strings"

	"github.com/outboxchaos/outboxchaos/branches"
)

// writeBranches renders the map of the error branches of system/ the
// report's runs reached (issue 22, part 5).
func writeBranches(p func(string, ...any), m *branches.Map) {
	if m == nil {
		return
	}
	r, n := m.Totals()
	p("## Error branches reached\n\nEvery error-handling branch of `system/` (an `if` on an error, `errors.Is`/`As`, a `case` on a context's end; `system/testenv` left out) and whether a named scenario, random schedule or crash point of this report executed it (the canaries, deliberately broken, do not count): the pods run a binary built with `go build -cover` (`make cover-bin`) and write their counters to `GOCOVERDIR`, merged with `go tool covdata`. A pod killed from outside (SIGKILL) loses the counters of its last life; a pod dying at a kill-point writes them first. "+
		"**%d of %d reached (%.0f %%).**\n\n", r, n, pct(r, n))
	p("| package | branches | reached | not reached |\n|---|---:|---:|---|\n")
	for _, pkg := range m.ByPackage() {
		var miss []string
		for _, b := range pkg.Missed {
			miss = append(miss, fmt.Sprintf("`%s:%d` %s", strings.TrimPrefix(b.File, pkg.Pkg+"/"), b.Line, b.Func))
		}
		p("| `%s` | %d | %d | %s |\n", shortPkg(pkg.Pkg), pkg.Total, pkg.Reached, strings.Join(miss, ", "))
	}
	p("\n")
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
