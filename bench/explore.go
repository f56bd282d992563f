package bench

import (
	"fmt"
	"strings"
	"time"

	"github.com/outboxchaos/outboxchaos/reports"
	"github.com/outboxchaos/outboxchaos/rig"
)

// ExploreCost is what random schedules cost, run one at a time on the
// bench's machine: each schedule on a new schema and on a kept one from a
// pool, one run after the other.
type ExploreCost struct {
	Seed int64
	// Rows are the schedules' summed costs (reports.CostOf), one row per
	// way of getting a schema: a new one each, then kept ones.
	Rows []reports.CostRow
	// Failed broke the contract; NotJudged could not be judged. Neither
	// is a benchmark failure, but either makes the figures suspect.
	Failed, NotJudged int
	// Sessions are the Postgres connections the schedules of each row
	// opened (pg_stat_database.sessions, before and after each run);
	// PerConnection what opening and closing one costs Postgres in CPU,
	// measured apart on ConnProbe connections. Empty or zero: not
	// measured.
	Sessions      []int64
	PerConnection time.Duration
	ConnProbe     int
}

// exploreSection is PERFORMANCE.md's section on the exploration's cost,
// "" when it was not measured.
func (r *Report) exploreSection() string {
	e := r.Explore
	if e == nil {
		return ""
	}
	md := reports.CostMarkdown(e.Rows)
	if md == "" {
		md = "No schedule was judged.\n"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "\n## What a random schedule costs\n\n")
	fmt.Fprintf(&b, "Random schedules drawn from seed %d (`outboxchaos explore`'s generator), run one at a time through `scenarios.Run` with the pipeline's pods (`outboxbench -explore`) against the same PostgreSQL and RabbitMQ, after the measurements above. Each schedule runs twice, one run right after the other: on a schema of its own, created, migrated and dropped, and on a kept, migrated schema from a pool, emptied and checked after each run (`sandbox.Pool`; what `explore`, `scenario run`, `crashpoints` and `report` do unless `--fresh-schemas`). %d runs broke the contract, %d could not be judged.\n\n", e.Seed, e.Failed, e.NotJudged)
	b.WriteString(md)
	if ratio := e.ratio(); ratio != "" {
		b.WriteString("\n" + ratio + "\n")
	}
	for i, row := range e.Rows {
		if i >= len(e.Sessions) || row.Runs == 0 || e.Sessions[i] <= 0 || e.PerConnection <= 0 {
			continue
		}
		perRun := float64(e.Sessions[i]) / float64(row.Runs)
		pg := row.Sum.CPU[rig.CPUPostgres].Seconds() / float64(row.Runs)
		if i == 0 {
			fmt.Fprintf(&b, "\n**Where Postgres's CPU goes.** Opening and closing one connection costs Postgres %.0f ms of CPU on this machine (%d connections opened and closed apart: each backend's time on a CPU, read from `/proc/PID/schedstat` just before it closes, and the postmaster's, which forks and reaps them). Connections counted by `pg_stat_database.sessions` around each run (the pods' pools, the job and migration pods, the harness's sandbox, observation pool and teardown):\n\n",
				float64(e.PerConnection)/float64(time.Millisecond), e.ConnProbe)
		}
		fmt.Fprintf(&b, "- %s: %d connections, %.1f per schedule: about %.0f %% of Postgres's CPU per schedule is spent starting and ending backends, not running statements.\n",
			row.What, e.Sessions[i], perRun, 100*perRun*e.PerConnection.Seconds()/pg)
	}
	return b.String()
}

// ratio compares the last row with the first, per schedule: what kept
// schemas cost over new ones ("" with fewer than two rows measured).
func (e *ExploreCost) ratio() string {
	if len(e.Rows) < 2 || e.Rows[0].Runs == 0 || e.Rows[len(e.Rows)-1].Runs == 0 {
		return ""
	}
	a, b := e.Rows[0], e.Rows[len(e.Rows)-1]
	per := func(r reports.CostRow, d time.Duration) float64 { return d.Seconds() / float64(r.Runs) }
	x := func(f func(r reports.CostRow) time.Duration) string {
		if per(a, f(a)) == 0 {
			return "–"
		}
		return fmt.Sprintf("%.2f", per(b, f(b))/per(a, f(a)))
	}
	return fmt.Sprintf("**%s ÷ %s**, per schedule, measured side by side: CPU %s (postgres %s, rabbitmq %s, pods %s, harness %s), wall %s (setup %s, teardown %s).",
		b.What, a.What,
		x(func(r reports.CostRow) time.Duration { return r.Sum.CPU.Total() }),
		x(func(r reports.CostRow) time.Duration { return r.Sum.CPU[rig.CPUPostgres] }),
		x(func(r reports.CostRow) time.Duration { return r.Sum.CPU[rig.CPURabbitMQ] }),
		x(func(r reports.CostRow) time.Duration { return r.Sum.CPU[rig.CPUPods] }),
		x(func(r reports.CostRow) time.Duration { return r.Sum.CPU[rig.CPUHarness] }),
		x(func(r reports.CostRow) time.Duration { return r.Sum.Wall() }),
		x(func(r reports.CostRow) time.Duration { return r.Sum.Setup }),
		x(func(r reports.CostRow) time.Duration { return r.Sum.Teardown }))
}
