package run

import (
	"slices"
	"testing"
)

// TestJoinPointVars: two failpoints armed in one pod reach it as one
// variable naming both (a process sees only the last entry of a variable);
// other variables pass as they were.
func TestJoinPointVars(t *testing.T) {
	got := joinPointVars([]string{"A=1", "OUTBOXCHAOS_FAILPOINT=relay.refuse-publish:3", "OUTBOXCHAOS_KILLPOINT=relay.after-claim:1",
		"OUTBOXCHAOS_FAILPOINT=relay.misroute-publish:6", "A=2"})
	want := []string{"A=1", "OUTBOXCHAOS_FAILPOINT=relay.refuse-publish:3,relay.misroute-publish:6", "OUTBOXCHAOS_KILLPOINT=relay.after-claim:1", "A=2"}
	if !slices.Equal(got, want) {
		t.Fatalf("got %q, want %q", got, want)
	}
}
