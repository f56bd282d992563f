package scenarios

import (
	"strings"
	"testing"
)

// TestPeerCasesValidate: every peer case is a valid scenario that survives
// a JSON round trip, and names no relay-specific event our peers do not log.
func TestPeerCasesValidate(t *testing.T) {
	seen := map[string]bool{}
	for _, s := range PeerCases() {
		if err := s.Validate(); err != nil {
			t.Errorf("%s: %v", s.Name, err)
		}
		if seen[s.Name] || !IsPeerCase(s.Name) {
			t.Errorf("%s: duplicate or not named peer-*", s.Name)
		}
		seen[s.Name] = true
		back, _, err := Parse(s.JSON())
		if err != nil || back.Name != s.Name {
			t.Errorf("%s: JSON round trip: %v", s.Name, err)
		}
		for _, ev := range []string{`"claim"`, `"mark"`, `"reclaim"`, `"lost-lease"`} {
			if strings.Contains(string(s.JSON()), `"name":`+ev) {
				t.Errorf("%s waits for our relay's event %s, which no peer logs", s.Name, ev)
			}
		}
	}
}

// TestPeerCaseApplies: the cases a peer has no step for are skipped with a
// reason, the rest apply.
func TestPeerCaseApplies(t *testing.T) {
	for _, c := range []struct {
		name, impl string
		want       bool
	}{
		{"peer-crash-after-publish", "watermill-offsets", false},
		{"peer-crash-after-publish", "river047", true},
		{"peer-rescuer-race", "ours", false},
		{"peer-rescuer-race", "river0512", true},
		{"peer-happy", "watermill-queue-confirm", true},
	} {
		got, why := PeerCaseApplies(c.name, c.impl)
		if got != c.want || (!got && why == "") {
			t.Errorf("PeerCaseApplies(%s, %s) = %v %q, want %v with a reason when false", c.name, c.impl, got, why, c.want)
		}
	}
}
