package catalogue

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/outboxchaos/outboxchaos/faults"
	"github.com/outboxchaos/outboxchaos/peers"
	"github.com/outboxchaos/outboxchaos/rig"
	"github.com/outboxchaos/outboxchaos/scenarios/scenario"
	"github.com/outboxchaos/outboxchaos/system/notification"
)

// peerDeadlinePrefix names the cases drawn across the relay's own
// declared deadlines.
const peerDeadlinePrefix = "peer-deadline-"

// peerDeadlineFault is the Fault column of a deadline case: the same for
// every relay, while what is drawn is each relay's own.
const peerDeadlineFault = "one link fault held just under or just over one of the relay's own declared deadlines (drawn per relay from its declaration; the run's timeline names the deadline and the draw)"

// crossable are p's declared deadlines that are durations a run can
// cross: "none", "the run's day" and those longer than a fault a run
// holds (maxDrawn) are not.
func crossable(p peers.Peer) []peers.Deadline {
	var out []peers.Deadline
	for _, dl := range p.Deadlines {
		if d, err := time.ParseDuration(dl.Value); err == nil && d > 0 && d <= MaxDrawn {
			out = append(out, dl)
		}
	}
	return out
}

// peerDeadline draws, for seed, a relay-side schedule sized by one of
// p's declared deadlines: two supervised relays, and one fault on the
// relays' links, put in place, once a first message went through, before the rest of the batch is enqueued (a latency on what RabbitMQ sends them, their RabbitMQ
// link down, or their Postgres requests stalled) held for a duration drawn
// just under (0.7–0.95×) or just over (1.05–1.5×) the deadline, so the
// relay's own timer fires, or nearly does, while the fault holds. A relay
// that declares no such deadline gets a case with no steps, which
// PeerCaseApplies reports as not applicable.
func peerDeadline(seed uint64, p peers.Peer) *scenario.Scenario {
	s := &scenario.Scenario{
		Name: fmt.Sprintf("%s%d", peerDeadlinePrefix, seed), Row: "peer", AllowUnfired: true,
		Fault: peerDeadlineFault, Outcome: "every message delivered once at the handset",
	}
	dls := crossable(p)
	if len(dls) == 0 {
		s.Description = "a fault held across one of the relay's declared deadlines (this relay declares none a run can cross)"
		s.Steps = []scenario.Step{Enqueue(), pipeline(), Await(ledger(6))}
		return s
	}
	rng := rand.New(rand.NewChaCha8([32]byte{byte(seed), byte(seed >> 8), 0xde, 0xad}))
	dl := dls[rng.IntN(len(dls))]
	d, _ := time.ParseDuration(dl.Value)
	band, lo, hi := "just under", 700, 950
	if rng.IntN(2) == 1 {
		band, lo, hi = "just over", 1050, 1500
	}
	hold := time.Duration(int64(d) * int64(lo+rng.IntN(hi-lo+1)) / 1000).Round(time.Millisecond)
	var choices []faults.Spec
	if p.Features.Broker {
		choices = append(choices, linkDown("rabbitmq-relay"))
		if !p.Features.NoConfirms {
			choices = append(choices, latency("rabbitmq-relay", rig.Downstream, hold))
		}
	}
	choices = append(choices, stall("postgres-relay", rig.Upstream))
	f := choices[rng.IntN(len(choices))]
	perKind := 3 + rng.IntN(3)
	after := time.Duration(rng.IntN(300)) * time.Millisecond
	// A latency delays each answer by hold: held twice as long, it
	// delays the answers of a whole relay pass, not only the first.
	held := hold
	if f.Kind == faults.KindLatency {
		held = 2*hold + time.Second
	}
	what := fmt.Sprintf("%s %s on %s", f.Kind, f.Direction, f.Link)
	if f.Kind == faults.KindLatency {
		what = fmt.Sprintf("latency %s on %s %s", hold, f.Link, f.Direction)
	}
	s.PerKind = perKind
	s.Description = fmt.Sprintf("%s held %s (%s) %s's %s (%s: %s)", what, held, band, p.Name, dl.Name, dl.Value, dl.Why)
	s.Steps = []scenario.Step{
		start("worker", "cleanup"),
		{Do: "start", Roles: []string{"relay"}, Supervise: true},
		{Do: "start", Roles: []string{"relay"}, Supervise: true},
		{Do: "enqueue", Kinds: []notification.Kind{notification.GradeRenewal}},
		note(within(Await(ledger(1)), 60*time.Second), "the relays hold live connections"),
		note(scenario.Step{Do: "during", Faults: fs(f), After: faults.Duration(after), For: faults.Duration(held), Optional: true,
			Steps: []scenario.Step{enqueueN(perKind)}},
			fmt.Sprintf("%s the relay's %s of %s, in place while the batch is enqueued and relayed", band, dl.Name, dl.Value)),
		{Do: "await", Cond: &scenario.Cond{Ledger: 6 * perKind}, Timeout: faults.Duration(80 * time.Second)},
	}
	return s
}

// ForPeer returns s as it runs against p: a deadline case is drawn anew
// across p's own declared deadlines; every other case is s.
func ForPeer(s *scenario.Scenario, p peers.Peer) *scenario.Scenario {
	if !strings.HasPrefix(s.Name, peerDeadlinePrefix) {
		return s
	}
	var seed uint64
	if _, err := fmt.Sscanf(strings.TrimPrefix(s.Name, peerDeadlinePrefix), "%d", &seed); err != nil {
		return s
	}
	out := peerDeadline(seed, p)
	out.Settle = s.Settle
	return out
}

// MaxDrawn bounds the boundaries a schedule draws around: a duration four
// times a longer one (a peer's 30 s rescuer) would outlast the run.
const MaxDrawn = 6 * time.Second
