package catalogue

import (
	"strings"
	"testing"

	"github.com/outboxchaos/outboxchaos/peers"
	"github.com/outboxchaos/outboxchaos/scenarios/scenario"
	kp "github.com/outboxchaos/outboxchaos/system/killpoint"
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
		back, _, err := scenario.Parse(s.JSON())
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

// TestPeerCaseApplies: applicability follows the peers' declared features
// alone: the cases a peer has no step for are skipped with a reason, the
// rest apply.
func TestPeerCaseApplies(t *testing.T) {
	noBroker := peers.Peer{Name: "x", Features: peers.Features{KillPoints: []string{kp.RelayAfterClaim}}}
	confirmLess := peers.Peer{Name: "y", Features: peers.Features{Broker: true, PublishEvents: true, NoConfirms: true}}
	for _, c := range []struct {
		name, impl string
		peer       *peers.Peer
		want       bool
	}{
		{"peer-crash-after-publish", "watermill-offsets", nil, false},
		{"peer-crash-after-publish", "river047", nil, true},
		{"peer-rescuer-race", "ours", nil, false},
		{"peer-rescuer-race", "river0512", nil, true},
		{"peer-happy", "watermill-queue-confirm", nil, true},
		{"peer-crash-after-claim", "", &noBroker, true},
		{"peer-crash-before-mark", "", &noBroker, false},
		{"peer-broker-cut", "", &noBroker, false},
		{"peer-publish-lost", "", &noBroker, false},
		{"peer-pg-cut", "", &noBroker, true},
		{"peer-crash-before-mark", "sendrecord", nil, true},
		{"peer-stale", "sendrecord", nil, false},
		{"peer-consumer-crash-after-send", "sendrecord", nil, false},
		{"peer-consumer-crash-after-send", "ours", nil, true},
		{"peer-consumer-crash-after-send", "jetstream", nil, true},
		{"peer-js-resend-outside-window", "jetstream", nil, true},
		{"peer-js-resend-outside-window", "ours", nil, false},
		{"peer-js-crash", "jetstream", nil, true},
		{"peer-js-crash", "river0512", nil, false},
		{"peer-js-consumer-link-cut", "watermill-queue", nil, false},
		{"peer-broker-cut", "jetstream", nil, false},
		{"peer-crash-after-publish", "jetstream", nil, true},
		{"peer-random-2", "jetstream", nil, false},
		{"peer-unroutable", "jetstream", nil, false},
		{"peer-unroutable", "sendrecord", nil, false},
		{"peer-kill-after-publish", "watermill-offsets", nil, false},
		{"peer-kill-after-mark", "watermill-queue", nil, false},
		{"peer-kill-after-publish", "watermill-offsets-confirm", nil, false},
		{"peer-kill-after-publish", "river0512", nil, true},
		{"peer-kill-after-claim", "watermill-queue", nil, true},
		{"peer-confirm-late", "watermill-queue", nil, true},
		{"peer-kill-after-claim", "jetstream", nil, false},
		{"peer-deadline-1", "watermill-queue", nil, false},
		{"peer-deadline-1", "ours", nil, true},
		{"peer-unroutable", "river0512", nil, true},
		{"peer-queue-full", "jetstream", nil, false},
		{"peer-queue-full", "", &noBroker, false},
		{"peer-queue-full", "watermill-queue-confirm", nil, true},
		{"peer-confirm-late", "watermill-queue", nil, true},
		{"peer-stale", "watermill-offsets", nil, true},
		{"peer-confirm-late", "", &confirmLess, false},
		{"peer-stale", "", &confirmLess, false},
		{"peer-happy", "", &confirmLess, true},
		{"peer-confirm-late", "watermill-queue-confirm", nil, true},
		{"peer-stale", "ours", nil, true},
		{"peer-publish-lost", "watermill-queue", nil, true},
		{"peer-queue-full", "watermill-queue", nil, true},
	} {
		s, ok := LookupPeerCase(c.name)
		if !ok {
			t.Fatalf("no case %s", c.name)
		}
		p := c.peer
		if p == nil {
			q, err := peers.Lookup(c.impl)
			if err != nil {
				t.Fatal(err)
			}
			p = &q
		}
		got, why := PeerCaseApplies(s, *p)
		if got != c.want || (!got && why == "") {
			t.Errorf("PeerCaseApplies(%s, %s) = %v %q, want %v with a reason when false", c.name, p.Name, got, why, c.want)
		}
	}
}
