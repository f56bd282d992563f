package reports

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/outboxchaos/outboxchaos/checker"
	"github.com/outboxchaos/outboxchaos/scenarios"
	"github.com/outboxchaos/outboxchaos/scenarios/catalogue"
	"github.com/outboxchaos/outboxchaos/scenarios/scenario"
)

// TestPeersReport: the matrix marks a violation, the violation section
// gives its reproduction and classification, a case that does not apply
// says n/a, and a saved matrix renders the same after a JSON round trip.
func TestPeersReport(t *testing.T) {
	race, _ := catalogue.LookupPeerCase("peer-rescuer-race")
	p := Peers{Cases: []*scenario.Scenario{race}, Command: "make peers",
		Impls:    []PeerImpl{{Name: "ours"}, {Name: "river047", Settings: []string{"version=v0.47.0\tpinned in go.mod"}}},
		Findings: map[string]Finding{"river047/peer-rescuer-race": {Class: "bug in the peer", How: "told apart by version", Program: "reports/peers/x/main.go"}}}
	p.SetCell(PeerCell{Impl: "ours", Case: race.Name, NA: "River's rescuer only"})
	p.SetCell(PeerCell{Impl: "river047", Case: race.Name, Seed: 7, Verdict: checker.Verdict{Intents: 1, DeliveredOnce: 1}, Copies: 1,
		Err: "confirmed publishes of notification-outbox-1: want 1, got 2", Timeline: "  +1s relay-1 KILLPOINT x\n"})
	var b strings.Builder
	if err := p.Write(&b); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{"| `peer-rescuer-race` | n/a | ✗ 1 / 1 / 0 / 0 / 0 |", "--impl river047 --seed 7",
		"**bug in the peer**", "reports/peers/x/main.go", "| version | v0.47.0 | pinned in go.mod |"} {
		if !strings.Contains(out, want) {
			t.Errorf("report lacks %q:\n%s", want, out)
		}
	}
	raw, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	var back Peers
	if err := json.Unmarshal(raw, &back); err != nil {
		t.Fatal(err)
	}
	back.Findings = p.Findings
	var b2 strings.Builder
	if err := back.Write(&b2); err != nil || b2.String() != out {
		t.Errorf("a saved matrix renders differently (err %v)", err)
	}
}

// A peer cell not judged is neither a pass nor a violation: the matrix
// shows "?", the summary counts it apart, and its counts are left out.
func TestPeersReportNotJudged(t *testing.T) {
	t.Parallel()
	race, _ := catalogue.LookupPeerCase("peer-rescuer-race")
	p := Peers{Cases: []*scenario.Scenario{race}, Command: "make peers", Impls: []PeerImpl{{Name: "ours"}}}
	c := NewPeerCell("ours", race.Name, scenarios.Result{Seed: 3, Verdict: checker.Verdict{Intents: 6, Stuck: 6},
		NotJudged: errors.New("preflight: RabbitMQ unreachable")})
	if c.Violation() {
		t.Fatal("a cell not judged is a violation")
	}
	p.SetCell(c)
	var b strings.Builder
	if err := p.Write(&b); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{"| ours | 1 | 0 | 1 | 0 | 0 | 0 | 0 |", "| `peer-rescuer-race` | ? not judged |",
		"- `ours` × `peer-rescuer-race`: preflight: RabbitMQ unreachable", "None: every applicable cell kept the contract."} {
		if !strings.Contains(out, want) {
			t.Errorf("report lacks %q:\n%s", want, out)
		}
	}
}

// A cell says how many of its run's faults met the pipeline, and one whose
// fault never did is listed with the fault that did not fire: a ✓ judged
// on a run without its fault is not taken for one with it.
func TestPeersReportFiredFaults(t *testing.T) {
	t.Parallel()
	random, _ := catalogue.LookupPeerCase("peer-random-outside-1")
	p := Peers{Cases: []*scenario.Scenario{random}, Command: "make peers", Impls: []PeerImpl{{Name: "ours"}}}
	p.SetCell(NewPeerCell("ours", random.Name, scenarios.Result{Seed: 3, Verdict: checker.Verdict{Intents: 24, DeliveredOnce: 24},
		Faults: []checker.FaultRecord{{Kind: "kill", Target: "relay-1", Fired: true}, {Kind: "down", Target: "rabbitmq-relay"}}}))
	var b strings.Builder
	if err := p.Write(&b); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{"| `peer-random-outside-1` | ✓ 24 / 0 / 0 / 0 / 0 ⚡1/2 |",
		"- `ours` × `peer-random-outside-1`: down rabbitmq-relay did not fire (fired: kill relay-1)"} {
		if !strings.Contains(out, want) {
			t.Errorf("report lacks %q:\n%s", want, out)
		}
	}
}
