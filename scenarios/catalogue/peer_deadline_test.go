package catalogue

import (
	"strings"
	"testing"
	"time"

	"github.com/outboxchaos/outboxchaos/peers"
	"github.com/outboxchaos/outboxchaos/scenarios/scenario"
)

// TestPeerDeadlineCrossed: a deadline case is drawn across the relay's own
// declared deadline, each relay its own, with its fault held just under
// or just over it; a relay that declares no deadline a run can cross is
// not run on it, with the reason.
func TestPeerDeadlineCrossed(t *testing.T) {
	s, ok := LookupPeerCase(peerDeadlinePrefix + "1")
	if !ok {
		t.Fatal("no deadline case")
	}
	seen := map[string]bool{}
	for _, p := range peers.All() {
		got := ForPeer(s, p)
		if err := got.Validate(); err != nil {
			t.Fatalf("%s: %v", p.Name, err)
		}
		ok, why := PeerCaseApplies(s, p)
		if len(crossable(p)) == 0 {
			if ok || !strings.Contains(why, "declares none") {
				t.Errorf("%s declares no crossable deadline, yet the case applies (%v, %q)", p.Name, ok, why)
			}
			continue
		}
		if !strings.Contains(got.Description, p.Name+"'s ") {
			t.Errorf("%s: the draw does not name the relay's deadline: %s", p.Name, got.Description)
		}
		var during *scenario.Step
		walkSteps(got.Steps, func(st scenario.Step) {
			if st.Do == "during" {
				during = &st
			}
		})
		if during == nil {
			t.Fatalf("%s: no fault in %s", p.Name, got.Description)
		}
		crossed := false
		for _, dl := range crossable(p) {
			d, _ := time.ParseDuration(dl.Value)
			hold := during.For.D()
			if f := during.Faults[0]; f.Kind == "latency" {
				hold = f.Delay.D()
			}
			if hold >= d*7/10 && hold <= d*3/2 && hold != d {
				crossed = true
			}
		}
		if !crossed {
			t.Errorf("%s: %s is not held near any of its deadlines %v", p.Name, got.Description, crossable(p))
		}
		seen[got.Description] = true
	}
	if len(seen) < 2 {
		t.Errorf("every relay drew the same schedule: %v", seen)
	}
}
