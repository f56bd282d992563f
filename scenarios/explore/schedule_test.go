package explore

import (
	"slices"
	"testing"
)

// TestSchedulesAreValidScenarios: random schedules become scenarios on the
// same engine, and every one validates.
func TestSchedulesAreValidScenarios(t *testing.T) {
	t.Parallel()
	d := NewRandDraw(1)
	for i := 0; i < 500; i++ {
		s := Generate(d).Scenario("property")
		if err := s.Validate(); err != nil {
			t.Fatalf("schedule %d: %v\n%s", i, err, s.JSON())
		}
	}
}

// TestScheduleFaultsAreSpecs: a random schedule's faults are catalogue
// specs that build, each placed by a known When, and a pod dies at most at
// one kill-point.
func TestScheduleFaultsAreSpecs(t *testing.T) {
	t.Parallel()
	whens := []string{WhenFirst, WhenArmed, WhenArmedEvery, WhenRunning, WhenConsuming, WhenWindow, WhenEnd, WhenPaused}
	for seed := int64(0); seed < 500; seed++ {
		s := GenerateInfra(NewRandDraw(seed))
		kills := map[string]int{}
		for _, f := range s.Faults {
			if _, err := f.Spec.Build(); err != nil {
				t.Fatalf("seed %d: %s: %v", seed, f, err)
			}
			if !slices.Contains(whens, f.When) {
				t.Fatalf("seed %d: %s: unknown when %q", seed, f, f.When)
			}
			if (f.When == WhenWindow || f.When == WhenPaused) != (f.For > 0) {
				t.Fatalf("seed %d: %s: a window or a thaw and only they have a length", seed, f)
			}
			if f.Kind == "kill-point" {
				kills[f.Role]++
			}
		}
		for role, n := range kills {
			if n > 1 {
				t.Fatalf("seed %d: %d kill-points armed in %s: %s", seed, n, role, s)
			}
		}
	}
}
