package reports

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/outboxchaos/outboxchaos/rig"
	"github.com/outboxchaos/outboxchaos/scenarios"
)

// CostRow is what a group of runs cost, summed over its runs
// (scenarios.Cost: wall time by phase, CPU by process class).
type CostRow struct {
	What string         `json:"what"`
	Runs int            `json:"runs"`
	Sum  scenarios.Cost `json:"sum"`
}

// CostOf sums the cost of the judged runs among rs (a run not judged
// may have stopped anywhere, so its cost says nothing).
func CostOf(what string, rs []scenarios.Result) CostRow {
	row := CostRow{What: what}
	for _, r := range rs {
		if r.Name == "" || r.NotJudged != nil {
			continue
		}
		row.Sum = row.Sum.Add(r.Cost)
		row.Runs++
	}
	return row
}

// perRun is d averaged over the row's runs, in seconds.
func (c CostRow) perRun(d time.Duration) string {
	return fmt.Sprintf("%.2f", d.Seconds()/float64(c.Runs))
}

// cpuClasses are the columns of the CPU half of the table, in a fixed
// order so that pages compare.
var cpuClasses = []string{rig.CPUPostgres, rig.CPURabbitMQ, rig.CPUPods, rig.CPUHarness}

// CostMarkdown renders rows as a table of seconds per run (wall time by
// phase, CPU by process class), the rate a single sequential runner
// reaches, and the top costs over all rows: what to cut first.
// Rows without runs are left out; no rows give "".
func CostMarkdown(rows []CostRow) string {
	var keep []CostRow
	var all CostRow
	for _, r := range rows {
		if r.Runs > 0 {
			keep = append(keep, r)
			all.Sum = all.Sum.Add(r.Sum)
			all.Runs += r.Runs
		}
	}
	if len(keep) == 0 {
		return ""
	}
	var b strings.Builder
	w := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	w("Seconds per run. Wall time by phase — setup (preflight, sandbox schema and queues, migration), steps (of which waiting: awaiting a condition or a window's duration), settle, teardown — and CPU time by process class, read from `/proc` before and after each run.\n\n")
	w("| runs | count | wall | setup | steps | waiting | settle | teardown | runs a minute, one at a time | CPU | postgres | rabbitmq | pods | harness |\n")
	w("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, r := range keep {
		s := r.Sum
		rate := "–"
		if s.Wall() > 0 {
			rate = fmt.Sprintf("%.1f", float64(r.Runs)/s.Wall().Minutes())
		}
		w("| %s | %d | %s | %s | %s | %s | %s | %s | %s | %s |", r.What, r.Runs, r.perRun(s.Wall()), r.perRun(s.Setup), r.perRun(s.Steps),
			r.perRun(s.Waiting), r.perRun(s.Settle), r.perRun(s.Teardown), rate, r.perRun(s.CPU.Total()))
		for _, k := range cpuClasses {
			w(" %s |", r.perRun(s.CPU[k]))
		}
		w("\n")
	}
	w("\n%s\n", topCosts(all.Sum))
	return b.String()
}

// topCosts names the largest shares of wall time and of CPU time.
func topCosts(c scenarios.Cost) string {
	type share struct {
		what string
		d    time.Duration
	}
	pct := func(ss []share, total time.Duration) string {
		sort.SliceStable(ss, func(i, j int) bool { return ss[i].d > ss[j].d })
		var parts []string
		for _, s := range ss {
			if total > 0 {
				parts = append(parts, fmt.Sprintf("%s %.0f %%", s.what, 100*s.d.Seconds()/total.Seconds()))
			}
		}
		return strings.Join(parts, ", ")
	}
	wall := []share{{"waiting in steps", c.Waiting}, {"the rest of the steps", c.Steps - c.Waiting}, {"settle", c.Settle},
		{"setup", c.Setup}, {"teardown", c.Teardown}}
	out := "**Top costs.** Wall time: " + pct(wall, c.Wall()) + "."
	if t := c.CPU.Total(); t > 0 {
		var cpu []share
		for _, k := range cpuClasses {
			cpu = append(cpu, share{k, c.CPU[k]})
		}
		out += " CPU time: " + pct(cpu, t) + "."
	}
	return out + " Postgres, RabbitMQ and the harness are read machine-wide: exact while runs go one at a time on an otherwise quiet machine, as here."
}
