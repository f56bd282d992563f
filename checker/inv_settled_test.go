package checker

import "testing"

// TestSettled: a run that hit its deadline before quiescence breaks
// settled, and is counted stuck as recorded runs were.
func TestSettled(t *testing.T) {
	t.Parallel()
	if v := Check(State{Settled: true}); !v.OK() {
		t.Fatalf("settled: %s", v)
	}
	v := Check(State{})
	if v.OK() || v.Stuck != 1 || len(v.Broken()) != 1 || v.Broken()[0] != "settled" {
		t.Fatalf("not settled: %s, broken %v", v, v.Broken())
	}
}
