package reports

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strings"

	"github.com/outboxchaos/outboxchaos/checker"
	"github.com/outboxchaos/outboxchaos/scenarios"
)

// Glance is the reliability page's one screen in figures. The page keeps
// it in a comment line, so that the next page can say what moved.
type Glance struct {
	Named              int `json:"named"`
	NamedPassed        int `json:"named_passed"`
	Canaries           int `json:"canaries"`
	CanariesCaught     int `json:"canaries_caught"`
	Schedules          int `json:"schedules"`
	ScheduleViolations int `json:"schedule_violations"`
	Explored           int `json:"explored"`
	ExploredViolations int `json:"explored_violations"`
	CrashPoints        int `json:"crash_points"`
	CrashViolations    int `json:"crash_violations"`
}

// glanceLine is the comment line a page keeps its Glance in.
var glanceLine = regexp.MustCompile(`(?m)^<!-- glance (\{.*\}) -->$`)

// ParseGlance reads the figures an earlier page kept (false: it kept none).
func ParseGlance(page string) (Glance, bool) {
	m := glanceLine.FindStringSubmatch(page)
	if m == nil {
		return Glance{}, false
	}
	var g Glance
	if err := json.Unmarshal([]byte(m[1]), &g); err != nil {
		return Glance{}, false
	}
	return g, true
}

// glanceOf counts r's figures.
func glanceOf(r Reliability) Glance {
	g := Glance{Named: len(r.Named), Canaries: len(r.Canaries), Schedules: len(r.Property),
		Explored: r.Explored.Count[LedgerSchedules], ExploredViolations: r.Explored.Violations[LedgerSchedules],
		CrashPoints: r.Explored.Count[LedgerCrashPoints], CrashViolations: r.Explored.Violations[LedgerCrashPoints]}
	for _, res := range r.Named {
		if res.Outcome() == scenarios.OutcomePass {
			g.NamedPassed++
		}
	}
	for _, c := range r.Canaries {
		if c.Outcome() == scenarios.OutcomePass {
			g.CanariesCaught++
		}
	}
	for _, pr := range r.Property {
		if pr.Result.Outcome() != scenarios.OutcomePass {
			g.ScheduleViolations++
		}
	}
	return g
}

// writeGlance renders the page's first screen: every figure a reader
// needs to know whether the contract held, what moved since the last
// page, each invariant over every run, and where the rest is.
func writeGlance(p func(string, ...any), r Reliability) {
	g := glanceOf(r)
	last, had := Glance{}, r.Previous != nil
	if had {
		last = *r.Previous
	}
	p("## At a glance\n\n")
	lastCol := func(s string) string {
		if !had {
			return "–"
		}
		return s
	}
	p("| | this page | the last page |\n|---|---:|---:|\n")
	row := func(what string, a, b, la, lb int) {
		p("| %s | %d of %d | %s |\n", what, a, b, lastCol(fmt.Sprintf("%d of %d", la, lb)))
	}
	row("named scenarios that kept their row", g.NamedPassed, g.Named, last.NamedPassed, last.Named)
	row("canaries caught (deliberate bugs the suite turned red)", g.CanariesCaught, g.Canaries, last.CanariesCaught, last.Canaries)
	p("| this report's random schedules that broke the contract or were not judged | %d of %d | %s |\n",
		g.ScheduleViolations, g.Schedules, lastCol(fmt.Sprintf("%d of %d", last.ScheduleViolations, last.Schedules)))
	p("| random schedules explored so far (the ledger) that broke the contract | %d of %d | %s |\n",
		g.ExploredViolations, g.Explored, lastCol(fmt.Sprintf("%d of %d", last.ExploredViolations, last.Explored)))
	p("| crash points explored so far that broke the contract | %d of %d | %s |\n\n",
		g.CrashViolations, g.CrashPoints, lastCol(fmt.Sprintf("%d of %d", last.CrashViolations, last.CrashPoints)))

	p("Each invariant over this page's runs (named scenarios and random schedules: the runs it found broken) and over every exploration that kept its counts:\n\n")
	p("| invariant | named scenarios broken | random schedules broken | explored: judged / broken |\n|---|---:|---:|---:|\n")
	for _, inv := range checker.Invariants {
		named, sched := 0, 0
		for _, res := range r.Named {
			if brokeInvariant(res.Verdict, inv.Name) {
				named++
			}
		}
		for _, pr := range r.Property {
			if brokeInvariant(pr.Result.Verdict, inv.Name) {
				sched++
			}
		}
		c := r.Explored.Invariants[inv.Name]
		p("| `%s` | %d | %d | %d / %d |\n", inv.Name, named, sched, c.Judged, c.Broken)
	}
	p("\n")
	var bad []string
	for _, res := range r.Named {
		if res.Outcome() != scenarios.OutcomePass {
			bad = append(bad, fmt.Sprintf("`%s` (%s: `make scenario NAME=%s SEED=%d`)", res.Name, res.Outcome(), res.Name, res.Seed))
		}
	}
	for _, c := range r.Canaries {
		if c.Outcome() != scenarios.OutcomePass {
			bad = append(bad, fmt.Sprintf("canary `%s` (%s: `outboxchaos canary --bug %s`)", c.Bug, c.Outcome(), c.Bug))
		}
	}
	if len(bad) > 0 {
		p("Not passing on this page: %s.\n\n", strings.Join(bad, "; "))
	}
	p("Every defect the harness found is kept as a recorded run the checker recomputes (`checker/testdata/runs`) and is forced again by a named scenario of the failure table below, each with the command that reproduces it.\n\n")
	b, _ := json.Marshal(g)
	p("<!-- glance %s -->\n\n", b)
}

// brokeInvariant reports whether v records invariant name as broken.
func brokeInvariant(v checker.Verdict, name string) bool {
	for _, res := range v.Invariants {
		if res.Name == name && !res.Valid {
			return true
		}
	}
	return false
}
