package bench

import (
	"fmt"
	"strings"
	"time"

	"github.com/outboxchaos/outboxchaos/reports"
	"github.com/outboxchaos/outboxchaos/world"
)

// ExploreCost is what random schedules cost, run one at a time on the
// bench's machine (issue 23's baseline: schedules a minute and CPU per
// schedule, before time jumps and pooled sandboxes).
type ExploreCost struct {
	Seed int64
	// Rows are the schedules' summed costs (reports.CostOf).
	Rows []reports.CostRow
	// Failed broke the contract; NotJudged could not be judged. Neither
	// is a benchmark failure, but either makes the figures suspect.
	Failed, NotJudged int
	// Sessions are the Postgres connections the schedules opened
	// (pg_stat_database.sessions, before and after); PerConnection what
	// opening and closing one costs Postgres in CPU, measured apart on
	// ConnProbe connections. Zero: not measured.
	Sessions      int64
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
	fmt.Fprintf(&b, "\n## What a random schedule costs (issue 23)\n\n")
	fmt.Fprintf(&b, "Random schedules drawn from seed %d (`outboxchaos explore`'s generator), run one at a time through `scenarios.Run` with the pipeline's pods (`outboxbench -explore`) against the same PostgreSQL and RabbitMQ, after the measurements above. %d broke the contract, %d could not be judged.\n\n", e.Seed, e.Failed, e.NotJudged)
	b.WriteString(md)
	if row, ok := e.row(); ok && e.Sessions > 0 && e.PerConnection > 0 {
		perRun := float64(e.Sessions) / float64(row.Runs)
		share := perRun * e.PerConnection.Seconds() / (row.Sum.CPU[world.CPUPostgres].Seconds() / float64(row.Runs))
		fmt.Fprintf(&b, "\n**Where Postgres's CPU goes.** The schedules opened %d Postgres connections, %.1f per schedule (`pg_stat_database.sessions`: the pods' pools, the job and migration pods, the harness's sandbox, observation pool and teardown). Opening and closing one connection costs Postgres %.0f ms of CPU on this machine (%d connections opened and closed apart: each backend's time on a CPU, read from `/proc/PID/schedstat` just before it closes, and the postmaster's, which forks and reaps them): about %.0f %% of Postgres's CPU per schedule is spent starting and ending backends, not running statements.\n",
			e.Sessions, perRun, float64(e.PerConnection)/float64(time.Millisecond), e.ConnProbe, 100*share)
	}
	return b.String()
}

// row is the schedules' cost row, if any ran.
func (e *ExploreCost) row() (reports.CostRow, bool) {
	for _, r := range e.Rows {
		if r.Runs > 0 {
			return r, true
		}
	}
	return reports.CostRow{}, false
}
