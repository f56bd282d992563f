package explore

import (
	"slices"
	"testing"

	"github.com/outboxchaos/outboxchaos/checker"
	"github.com/outboxchaos/outboxchaos/scenarios/scenario"
)

// TestStaleActors: about one schedule in four leaves an actor behind: the
// first pod of its role frozen at a point of its own until the others
// moved its row (a condition, bounded), then resumed; every actor is
// drawn, no schedule freezes two pods, each validates and its thaw step
// carries the condition. The draw is the last: without it every seed gives
// the schedule it gave before, but for the actors that move the row.
func TestStaleActors(t *testing.T) {
	t.Parallel()
	drawn := map[string]int{}
	for seed := int64(0); seed < 800; seed++ {
		s := Generate(NewRandDraw(seed))
		before := Generate(withoutDraw{NewRandDraw(seed), "stale actor", nil})
		sc := s.Scenario("stale")
		if err := sc.Validate(); err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		pauses, stale := 0, ""
		for _, f := range s.Faults {
			if f.Kind == "pause-point" {
				pauses++
			}
			if f.When == WhenPaused && f.Stale != "" {
				stale = f.Stale
				if f.Until == nil || f.For <= 0 {
					t.Fatalf("seed %d: %s resumes on no condition or bound", seed, f)
				}
			}
		}
		if pauses > 1 {
			t.Fatalf("seed %d: %d pods frozen: %s", seed, pauses, s)
		}
		if stale == "" {
			if s.String() != before.String() {
				t.Fatalf("seed %d: %s, without the stale actor %s", seed, s, before)
			}
			continue
		}
		if len(s.Faults) < len(before.Faults)+2 || !slices.EqualFunc(s.Faults[:len(before.Faults)], before.Faults, func(a, b Timed) bool { return a.String() == b.String() }) {
			t.Fatalf("seed %d: the stale actor changed earlier faults: %s, without it %s", seed, s, before)
		}
		if !hasThawOnce(sc.Steps) {
			t.Fatalf("seed %d: no thaw step waits for the others: %s", seed, s)
		}
		drawn[stale]++
	}
	for _, a := range StaleActors() {
		if drawn[a] == 0 {
			t.Errorf("stale actor %q never drawn in 800 schedules (%v)", a, drawn)
		}
	}
}

func hasThawOnce(steps []scenario.Step) bool {
	for _, st := range steps {
		if st.Do == "thaw" && st.Cond != nil || hasThawOnce(st.Steps) {
			return true
		}
	}
	return false
}

// TestAddStale: a stale actor counts as drawn, and as held once its
// pause-point fired.
func TestAddStale(t *testing.T) {
	t.Parallel()
	for seed := int64(0); ; seed++ {
		s := Generate(NewRandDraw(seed))
		var pause *Timed
		for i := range s.Faults {
			if s.Faults[i].Stale != "" && s.Faults[i].Kind == "pause-point" {
				pause = &s.Faults[i]
			}
		}
		if pause == nil {
			continue
		}
		var c Coverage
		c.AddHeld(s, nil)
		c.AddHeld(s, []checker.FaultRecord{{Kind: "pause-point", Fired: true, Detail: "pause-point " + pause.Point + ":1: worker-1 froze"}})
		if c.Held[pause.Stale+HeldDrawn] != 2 || c.Held[pause.Stale+HeldFroze] != 1 {
			t.Fatalf("seed %d: %v, want 2 drawn, 1 held", seed, c.Held)
		}
		return
	}
}
