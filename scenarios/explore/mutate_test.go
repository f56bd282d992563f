package explore

import (
	"reflect"
	"testing"
	"time"

	"github.com/outboxchaos/outboxchaos/scenarios/catalogue"
)

// A mutation touches only windows, keeps them inside the generator's
// bounds, makes each of its four kinds, and is a function of its draw.
func TestMutate(t *testing.T) {
	t.Parallel()
	seen := map[string]int{}
	for i := 0; i < 400; i++ {
		parent := budgetSchedule(7, i)
		child, op := mutate(parent, NewRandDraw(int64(i)))
		again, op2 := mutate(parent, NewRandDraw(int64(i)))
		if op != op2 || !reflect.DeepEqual(child, again) {
			t.Fatalf("schedule %d: the same draw mutated two ways", i)
		}
		seen[op]++
		keep := func(s Schedule) []Timed {
			var out []Timed
			for _, f := range s.Faults {
				if f.When != WhenWindow {
					out = append(out, f)
				}
			}
			return out
		}
		if !reflect.DeepEqual(keep(parent), keep(child)) {
			t.Fatalf("schedule %d, %s: a fault that is not a window changed:\n%v\n%v", i, op, parent, child)
		}
		if child.Relays != parent.Relays || child.Workers != parent.Workers || child.Reconcile != parent.Reconcile {
			t.Fatalf("schedule %d, %s: the topology changed", i, op)
		}
		windows := 0
		for _, f := range child.Faults {
			if f.When == WhenWindow {
				windows++
				if time.Duration(f.For) > 4*catalogue.MaxDrawn || time.Duration(f.After) > 4*catalogue.MaxDrawn {
					t.Fatalf("schedule %d, %s: window out of bounds: %s", i, op, f)
				}
			}
		}
		if windows > maxWindows+1 {
			t.Fatalf("schedule %d: %d windows", i, windows)
		}
		if err := child.Scenario("m").Validate(); err != nil {
			t.Fatalf("schedule %d, %s: the mutant is not a valid scenario: %v", i, op, err)
		}
	}
	for _, op := range []string{MutateRetime, MutateAdd, MutateDrop, MutateSettings} {
		if seen[op] == 0 {
			t.Errorf("no %s in 400 mutations: %v", op, seen)
		}
	}
}

// With one member per kind a withdrawn consent would skip every message:
// no schedule draws it then (explore's first schedule did, and exercised
// nothing).
func TestNoScheduleSkipsEverything(t *testing.T) {
	t.Parallel()
	for i := 0; i < 2000; i++ {
		s := budgetSchedule(1, i)
		for _, f := range s.Faults {
			if f.Kind == "withdraw-consent" && s.PerKind == 1 {
				t.Fatalf("schedule %d withdraws the consent of its only member: %s", i, s)
			}
		}
	}
}
