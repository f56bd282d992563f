package scenarios

import (
	"slices"
	"testing"

	"github.com/outboxchaos/outboxchaos/faults"
)

// TestPairSweep: every cell of the sweep gives a schedule that holds the
// cell's pair at the cell's point with the cell's fault on the partner,
// the same schedule for the same budget seed, and a valid scenario.
func TestPairSweep(t *testing.T) {
	cells := PairCells()
	want := 0
	for _, p := range heldPairs {
		want += len(p.Points) * len(p.Faults)
	}
	if len(cells) != want {
		t.Fatalf("%d cells, want every pair × point × fault: %d", len(cells), want)
	}
	for i, c := range cells {
		s, seed, ok := PairSchedule(7, i)
		if !ok {
			t.Errorf("cell %d (%s): no seed of %d kept the pair", i, c, pairSeedTries)
			continue
		}
		again, seed2, _ := PairSchedule(7, i)
		if seed2 != seed || again.String() != s.String() {
			t.Errorf("cell %d: another schedule on a second draw", i)
		}
		var pause, resume *Timed
		for k := range s.Faults {
			switch ft := &s.Faults[k]; {
			case ft.Pair == c.Pair && ft.Kind == "pause-point":
				pause = ft
			case ft.Pair == c.Pair && ft.When == WhenPaused:
				resume = ft
			}
		}
		if pause == nil || resume == nil || pause.Point != c.Point {
			t.Errorf("cell %d (%s): schedule %s does not hold the pair at its point", i, c, s)
			continue
		}
		inHeld := slices.ContainsFunc(resume.Held, func(f faults.Spec) bool { return faultName(f) == c.Fault })
		armed := slices.ContainsFunc(s.Faults, func(t Timed) bool {
			return t.Pair == c.Pair && t.Kind == "failpoint" && t.Point == heldPairs[c.pair].Faults[c.fault].Point
		})
		if !inHeld && !armed {
			t.Errorf("cell %d (%s): the partner's fault is missing from %s", i, c, s)
		}
		if err := s.Scenario("pair").Validate(); err != nil {
			t.Errorf("cell %d: %v", i, err)
		}
	}
}
