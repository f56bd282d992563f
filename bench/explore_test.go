package bench

import (
	"strings"
	"testing"
	"time"

	"github.com/outboxchaos/outboxchaos/reports"
	"github.com/outboxchaos/outboxchaos/rig"
	"github.com/outboxchaos/outboxchaos/scenarios"
)

// The exploration section names the connections' share of Postgres's CPU
// from the figures it was given: 2 schedules, 20 connections, 40 ms each,
// 1 s of Postgres CPU per schedule: 10 per schedule, 40 %; and with kept
// schemas 8 connections and half the CPU, the ratio of the two rows.
func TestExploreSection(t *testing.T) {
	t.Parallel()
	sum := scenarios.Cost{Steps: 4 * time.Second, CPU: rig.CPU{rig.CPUPostgres: 2 * time.Second}}
	kept := scenarios.Cost{Steps: 4 * time.Second, CPU: rig.CPU{rig.CPUPostgres: time.Second}}
	r := &Report{Explore: &ExploreCost{Seed: 3, Rows: []reports.CostRow{{What: "new", Runs: 2, Sum: sum}, {What: "kept", Runs: 2, Sum: kept}},
		Sessions: []int64{20, 8}, PerConnection: 40 * time.Millisecond, ConnProbe: 40}}
	md := r.Appendix()
	for _, want := range []string{"## What a random schedule costs", "seed 3", "new: 20 connections, 10.0 per schedule: about 40 %",
		"kept: 8 connections, 4.0 per schedule: about 32 %", "costs Postgres 40 ms", "**kept ÷ new**", "CPU 0.50 (postgres 0.50", "wall 1.00"} {
		if !strings.Contains(md, want) {
			t.Errorf("no %q in\n%s", want, md)
		}
	}
	if (&Report{}).Appendix() != "" {
		t.Error("nothing measured should add nothing")
	}
}
