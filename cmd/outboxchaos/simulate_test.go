package main

import (
	"context"
	"io"
	"testing"

	"github.com/outboxchaos/outboxchaos/checker"
	"github.com/outboxchaos/outboxchaos/sim"
)

// TestSimulateExitCodes: a day whose invariants hold and whose
// compression is valid exits 0; one that breaks an invariant exits 1
// (whatever its compression); one whose compression is not valid exits
// 3: its figures were distorted, so it is not judged.
func TestSimulateExitCodes(t *testing.T) {
	t.Parallel()
	held := checker.Verdict{Invariants: []checker.Result{{Name: "nothing-twice", Valid: true}}}
	broken := checker.Verdict{Invariants: []checker.Result{{Name: "true-alerts", Valid: false, Violations: 47}}}
	for _, c := range []struct {
		name string
		res  sim.Result
		want int
	}{
		{"held, valid", sim.Result{Verdict: held, Lag: sim.Lag{Valid: true}}, exitPass},
		{"broken", sim.Result{Verdict: broken, Lag: sim.Lag{Valid: true}}, exitViolated},
		{"broken, not valid", sim.Result{Verdict: broken}, exitViolated},
		{"held, not valid", sim.Result{Verdict: held, Lag: sim.Lag{Why: "compression added 40 %"}}, exitNotJudged},
	} {
		got := exitCode(context.Background(), "simulate", commands["simulate"], simOutcome(&c.res), io.Discard)
		if got != c.want {
			t.Errorf("%s: exit %d, want %d", c.name, got, c.want)
		}
	}
}
