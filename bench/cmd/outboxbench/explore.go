package main

import (
	"context"
	"fmt"
	"io"

	"github.com/outboxchaos/outboxchaos/bench"
	"github.com/outboxchaos/outboxchaos/reports"
	"github.com/outboxchaos/outboxchaos/scenarios"
)

// measureExplore runs n random schedules drawn from seed, one at a time,
// with bin (the outboxchaos binary) as the pods, and sums what they cost.
func measureExplore(ctx context.Context, bin string, n int, seed int64, pgURL, amqpURL string, progress io.Writer) *bench.ExploreCost {
	o := scenarios.DefaultOptions()
	o.PGURL, o.AMQPURL, o.Bin, o.Seed, o.Artifacts = pgURL, amqpURL, bin, seed, ""
	e := &bench.ExploreCost{Seed: seed}
	d := scenarios.NewRandDraw(seed)
	var results []scenarios.Result
	for i := 0; i < n && ctx.Err() == nil; i++ {
		sch := scenarios.Generate(d)
		res := scenarios.Run(ctx, sch.Scenario(fmt.Sprintf("bench-schedule-%d", i+1)), o)
		switch res.Outcome() {
		case scenarios.OutcomeFail:
			e.Failed++
		case scenarios.OutcomeError:
			e.NotJudged++
		}
		fmt.Fprintf(progress, "[bench] schedule %d/%d: %s; %s\n", i+1, n, res.Outcome(), res.Cost)
		results = append(results, res)
	}
	e.Rows = []reports.CostRow{reports.CostOf("random schedules", results)}
	return e
}
