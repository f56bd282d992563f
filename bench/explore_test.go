package bench

import (
	"strings"
	"testing"
	"time"

	"github.com/outboxchaos/outboxchaos/reports"
	"github.com/outboxchaos/outboxchaos/scenarios"
	"github.com/outboxchaos/outboxchaos/world"
)

// The exploration section names the connections' share of Postgres's CPU
// from the figures it was given: 2 schedules, 20 connections, 40 ms each,
// 1 s of Postgres CPU per schedule: 10 per schedule, 40 %.
func TestExploreSection(t *testing.T) {
	t.Parallel()
	sum := scenarios.Cost{Steps: 4 * time.Second, CPU: world.CPU{world.CPUPostgres: 2 * time.Second}}
	r := &Report{Explore: &ExploreCost{Seed: 3, Rows: []reports.CostRow{{What: "random schedules", Runs: 2, Sum: sum}},
		Sessions: 20, PerConnection: 40 * time.Millisecond, ConnProbe: 40}}
	md := r.Appendix()
	for _, want := range []string{"## What a random schedule costs", "seed 3", "opened 20 Postgres connections, 10.0 per schedule", "costs Postgres 40 ms", "about 40 %"} {
		if !strings.Contains(md, want) {
			t.Errorf("no %q in\n%s", want, md)
		}
	}
	if (&Report{}).Appendix() != "" {
		t.Error("nothing measured should add nothing")
	}
}
