package scenarios

import (
	"context"
	"testing"

	"github.com/outboxchaos/outboxchaos/checker"
)

// TestDrainedWaitsForFeedRounds: a quiescent run between two feed rounds
// is not drained, so a thaw or a crash-point wait does not give up on a
// point the next round reaches (explore seed 22 schedule 137: the thaw
// gave up on relay-1 at a quiescent moment before the second feed round,
// then relay-1 froze at relay.before-mark and stayed frozen: stuck 5).
func TestDrainedWaitsForFeedRounds(t *testing.T) {
	quiet := checker.State{Settled: true}
	if !checker.Quiescent(quiet) {
		t.Fatal("an empty state must be quiescent")
	}
	r := &runner{e: &Env{}}
	var during []bool
	verbs["test-probe"] = verb{doc: "test only", validate: func(Step) error { return nil },
		run: func(r *runner, _ context.Context, _ Step) error {
			during = append(during, r.drained(quiet))
			return nil
		}}
	defer delete(verbs, "test-probe")
	if err := r.parallel(context.Background(), []Step{{Do: "later", Steps: []Step{{Do: "test-probe"}}}}); err != nil {
		t.Fatal(err)
	}
	if len(during) != 1 || during[0] {
		t.Errorf("drained while a feed round was pending: %v, want [false]", during)
	}
	if !r.drained(quiet) {
		t.Error("not drained once every feed round finished")
	}
}
