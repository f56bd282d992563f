package run

import (
	"context"
	"testing"

	"github.com/outboxchaos/outboxchaos/checker"
	"github.com/outboxchaos/outboxchaos/scenarios/scenario"
)

// TestDrainedWaitsForFeedRounds: a quiescent run between two feed rounds
// is not drained, so a thaw or a crash-point wait does not give up on a
// point the next round reaches (a thaw that gave up on a relay at a
// quiescent moment before the second round left it to freeze at its
// point later and stay frozen, its rows stuck).
func TestDrainedWaitsForFeedRounds(t *testing.T) {
	quiet := checker.State{Settled: true}
	if !checker.Quiescent(quiet) {
		t.Fatal("an empty state must be quiescent")
	}
	r := &runner{e: &Env{}}
	var during []bool
	runs["test-probe"] = func(r *runner, _ context.Context, _ scenario.Step) error {
		during = append(during, r.drained(quiet))
		return nil
	}
	defer delete(runs, "test-probe")
	if err := r.parallel(context.Background(), []scenario.Step{{Do: "later", Steps: []scenario.Step{{Do: "test-probe"}}}}); err != nil {
		t.Fatal(err)
	}
	if len(during) != 1 || during[0] {
		t.Errorf("drained while a feed round was pending: %v, want [false]", during)
	}
	if !r.drained(quiet) {
		t.Error("not drained once every feed round finished")
	}
}
