package reports

import (
	"fmt"
	"strings"

	"github.com/outboxchaos/outboxchaos/scenarios/explore"
)

// CrashRun is one workload's crash-point exploration: how many points
// discovery listed up to the bound, and the outcome of each point run.
type CrashRun struct {
	Workload string
	Points   int
	Bound    int
	Outcomes []explore.CrashOutcome
}

// writeCrashPoints renders the crash-point section.
func writeCrashPoints(p func(string, ...any), runs []CrashRun) {
	if len(runs) == 0 {
		return
	}
	p("## Crash points\n\nEvery SQL statement and commit, publish, confirm, ack / nack / reject, vendor call and alert post is a crash point " +
		"(`system/crashpoint`). Per workload, a deterministic sample of the (process, step, before|after, hit) points discovery listed; " +
		"each run kills the process there, replaces it under a new instance name and checks the contract. `make crashpoints` runs them all.\n\n")
	p("| workload | points (up to hit) | explored | per process (died there) | violations | not judged |\n|---|---|---|---|---|---|\n")
	total, bad, unjudged := 0, 0, 0
	var violations, errored []explore.CrashOutcome
	for _, r := range runs {
		n, fired := map[string]int{}, map[string]int{}
		v, e := 0, 0
		for _, c := range r.Outcomes {
			if c.NotJudged() {
				// Not judged: it explored nothing, and broke nothing.
				e++
				errored = append(errored, c)
				continue
			}
			n[c.Target.Process]++
			if c.Fired {
				fired[c.Target.Process]++
			}
			if c.Violation() {
				v++
				violations = append(violations, c)
			}
		}
		var per []string
		for _, proc := range explore.CrashProcesses {
			if n[proc] > 0 {
				per = append(per, fmt.Sprintf("%s %d (%d)", proc, n[proc], fired[proc]))
			}
		}
		total += len(r.Outcomes) - e
		bad += v
		unjudged += e
		p("| `%s` | %d (%d) | %d | %s | %d | %d |\n", r.Workload, r.Points, r.Bound, len(r.Outcomes)-e, strings.Join(per, ", "), v, e)
	}
	p("\n%d crash points explored, %d violations", total, bad)
	if unjudged > 0 {
		p("; %d more not judged (ERROR: the harness or a service failed; neither kept nor broke the contract)", unjudged)
	}
	p(".\n\n")
	for _, c := range violations {
		p("- `%s` %s: %s — `%s`\n", c.Workload, c.Target, cell(firstLine(c.Result)), c.Replay())
	}
	for _, c := range errored {
		p("- not judged: `%s` %s: %s — `%s`\n", c.Workload, c.Target, cell(firstLine(c.Result)), c.Replay())
	}
	if len(violations)+len(errored) > 0 {
		p("\n")
	}
}
