package run

import (
	"maps"
	"slices"
	"testing"

	"github.com/outboxchaos/outboxchaos/scenarios/scenario"
)

// TestEveryVerbAndConditionRuns: the runner carries out every verb the
// language registers and probes every condition, and knows no other.
func TestEveryVerbAndConditionRuns(t *testing.T) {
	t.Parallel()
	if got, want := slices.Sorted(maps.Keys(runs)), scenario.VerbNames(); !slices.Equal(got, want) {
		t.Errorf("the runner carries out %v, the language has %v", got, want)
	}
	var conds []string
	for _, name := range scenario.ConditionNames() {
		if name != "any" && name != "all" {
			conds = append(conds, name)
		}
	}
	if got := slices.Sorted(maps.Keys(holding)); !slices.Equal(got, conds) {
		t.Errorf("the runner probes %v, the language has %v", got, conds)
	}
}
