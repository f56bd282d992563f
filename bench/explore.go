package bench

import (
	"fmt"
	"strings"

	"github.com/outboxchaos/outboxchaos/reports"
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
	return b.String()
}
