package explore

import (
	"reflect"
	"testing"
)

// TestCrashTargetsAndSample: discovery's counts become targets up to the
// bound, a target round-trips through its replay form, and a sample
// depends on the seed and each target's name only.
func TestCrashTargetsAndSample(t *testing.T) {
	d := Discovered{"worker": {"sql:update-1a2b3c:after": 3, "amqp:ack:before": 1}, "relay": {"amqp:confirm:after": 2}}
	ts := d.Targets(2)
	var got []string
	for _, tg := range ts {
		got = append(got, tg.String())
	}
	want := []string{"relay:amqp:confirm:after:1", "relay:amqp:confirm:after:2", "worker:amqp:ack:before:1",
		"worker:sql:update-1a2b3c:after:1", "worker:sql:update-1a2b3c:after:2"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("targets %v, want %v", got, want)
	}
	for _, tg := range ts {
		back, err := ParseCrashTarget(tg.String())
		if err != nil || back != tg {
			t.Fatalf("ParseCrashTarget(%q) = %v, %v", tg, back, err)
		}
	}
	if _, err := ParseCrashTarget("vendor:sql:x:after:1"); err == nil {
		t.Fatal("a target of an unknown process parsed")
	}
	s1 := Sample(ts, 2, 7)
	if len(s1) != 2 || !reflect.DeepEqual(s1, Sample(ts, 2, 7)) {
		t.Fatalf("sample not deterministic: %v", s1)
	}
	// One more point discovered does not change whether the others are
	// picked, unless it ranks among the k smallest itself.
	more := append(append([]CrashTarget(nil), ts...), CrashTarget{Process: "cleanup", Point: ts[0].Point})
	for _, tg := range Sample(more, 2, 7) {
		if tg.Process != "cleanup" && !containsTarget(s1, tg) {
			t.Fatalf("adding a point changed the sample: %v vs %v", Sample(more, 2, 7), s1)
		}
	}
	if len(Sample(ts, 0, 7)) != len(ts) {
		t.Fatal("a zero sample did not keep every target")
	}
}

func containsTarget(ts []CrashTarget, t CrashTarget) bool {
	for _, x := range ts {
		if x == t {
			return true
		}
	}
	return false
}

// TestCrashScenarioShape: a crash run arms only the target's first pod,
// supervises the others, replaces the target, and validates.
func TestCrashScenarioShape(t *testing.T) {
	for _, w := range CrashWorkloads {
		for _, proc := range CrashProcesses {
			tg, err := ParseCrashTarget(proc + ":sql:commit:after:2")
			if err != nil {
				t.Fatal(err)
			}
			s := w.CrashScenario(tg)
			if err := s.Validate(); err != nil {
				t.Fatalf("%s: %v", s.Name, err)
			}
			armed, replaced := 0, false
			for _, st := range s.Steps {
				for _, f := range st.Faults {
					if f.Kind == "crash-point" {
						armed++
						if st.Roles[0] != proc || st.Supervise {
							t.Errorf("%s: crash point armed in %v (supervised %v)", s.Name, st.Roles, st.Supervise)
						}
					}
				}
				replaced = replaced || (st.Do == "replace" && st.Pod == proc+"-1")
			}
			want := 1
			if proc == "reconciler" && !w.Reconciler {
				want = 0 // the workload runs no reconciler
			}
			if armed != want || (want == 1 && !replaced) {
				t.Errorf("%s: armed %d times, replaced %v", s.Name, armed, replaced)
			}
		}
		if err := w.DiscoveryScenario(t.TempDir()).Validate(); err != nil {
			t.Fatal(err)
		}
	}
}
