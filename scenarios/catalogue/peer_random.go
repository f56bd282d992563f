package catalogue

import (
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/outboxchaos/outboxchaos/faults"
	"github.com/outboxchaos/outboxchaos/rig"
	"github.com/outboxchaos/outboxchaos/scenarios/scenario"

	kp "github.com/outboxchaos/outboxchaos/system/killpoint"
)

// peerRandomSeeds are the random peer schedules make peers runs: each
// seed draws the same schedule every time, for every implementation.
var peerRandomSeeds = []uint64{1, 2, 3}

// peerRandom draws a random relay-side schedule any implementation can
// run: two or three supervised relays, each armed with a kill-point every
// implementation has (after the claim, after the confirm, before the
// "done" write) at a random hit, and one link fault (the relays' broker
// link down, 1.5 s confirm latency, or the relays' Postgres link stalled)
// at a random offset for a random while. Killed relays are restarted, as
// a deployment would; the run ends when every message reached a handset.
// Its only rules are the contract's.
func peerRandom(seed uint64) *scenario.Scenario {
	rng := rand.New(rand.NewChaCha8([32]byte{byte(seed), byte(seed >> 8), 0x5e, 0xed}))
	points := []string{kp.RelayAfterClaim, kp.RelayAfterConfirm, kp.RelayBeforeMark}
	perKind := 3 + rng.IntN(3)
	steps := []scenario.Step{enqueueN(perKind), start("worker", "cleanup")}
	relays := 2 + rng.IntN(2)
	var desc []string
	for i := 0; i < relays; i++ {
		p := points[rng.IntN(len(points))]
		hit := 1 + rng.IntN(4)
		steps = append(steps, scenario.Step{Do: "start", Roles: []string{"relay"}, Supervise: true,
			Faults: fs(faults.Spec{Kind: faults.KindKillPoint, Point: p, Hit: hit})})
		desc = append(desc, fmt.Sprintf("relay-%d %s:%d", i+1, p, hit))
	}
	link, after, hold := drawLinkFault(rng)
	steps = append(steps,
		scenario.Step{Do: "during", Faults: fs(link), After: faults.Duration(after), For: faults.Duration(hold), Optional: true},
		scenario.Step{Do: "await", Cond: &scenario.Cond{Ledger: 6 * perKind}, Timeout: faults.Duration(80 * time.Second)})
	return &scenario.Scenario{
		Name: fmt.Sprintf("peer-random-%d", seed), Row: "peer", PerKind: perKind, AllowUnfired: true,
		Description: fmt.Sprintf("random relay-side schedule %d: %d messages, %d supervised relays with kill-points, one link fault", seed, 6*perKind, relays),
		Fault:       fmt.Sprintf("%v; %s %s on %s after %s for %s", desc, link.Kind, link.Direction, link.Link, after, hold),
		Outcome:     "every message delivered once at the handset",
		Steps:       steps,
	}
}

// peerRandomOutside draws a random relay-side schedule that kills from
// outside, for every relay that publishes to RabbitMQ whether or not it
// declares kill-points: two or three supervised relays, one link fault as
// in peerRandom, and one to three SIGKILLs, each once the relays' links
// carried a drawn number more publishes (or Postgres statements) — or
// every message reached a handset, so a kill never waits on traffic that
// cannot come.
func peerRandomOutside(seed uint64) *scenario.Scenario {
	rng := rand.New(rand.NewChaCha8([32]byte{byte(seed), byte(seed >> 8), 0x0c, 0x75}))
	perKind := 3 + rng.IntN(3)
	all := 6 * perKind
	steps := []scenario.Step{enqueueN(perKind), start("worker", "cleanup")}
	relays := 2 + rng.IntN(2)
	for range relays {
		steps = append(steps, scenario.Step{Do: "start", Roles: []string{"relay"}, Supervise: true})
	}
	link, after, hold := drawLinkFault(rng)
	var kills []scenario.Step
	var desc []string
	for i := range 1 + rng.IntN(3) {
		pod := fmt.Sprintf("relay-%d", 1+i%relays)
		wait := scenario.TrafficCond{Link: "rabbitmq-relay", Message: string(rig.Publish), N: 1 + rng.IntN(8)}
		if rng.IntN(2) == 0 {
			wait = scenario.TrafficCond{Link: "postgres-relay", Message: string(rig.Statement), N: 1 + rng.IntN(12)}
		}
		kills = append(kills,
			scenario.Step{Do: "await", Cond: &scenario.Cond{Any: []scenario.Cond{{Traffic: &wait}, {Ledger: all}}}, Timeout: faults.Duration(60 * time.Second)},
			Inject(faults.Spec{Kind: faults.KindKill, Pod: pod}))
		desc = append(desc, fmt.Sprintf("SIGKILL %s after %d more %s on %s", pod, wait.N, wait.Message, wait.Link))
	}
	steps = append(steps, scenario.Step{Do: "parallel", Steps: []scenario.Step{
		{Do: "during", Faults: fs(link), After: faults.Duration(after), For: faults.Duration(hold), Optional: true},
		{Do: "later", After: faults.Duration(time.Duration(1+rng.IntN(500)) * time.Millisecond), Steps: kills},
	}})
	steps = append(steps, scenario.Step{Do: "await", Cond: &scenario.Cond{Ledger: all}, Timeout: faults.Duration(80 * time.Second)})
	return &scenario.Scenario{
		Name: fmt.Sprintf("peer-random-outside-%d", seed), Row: "peer", PerKind: perKind, AllowUnfired: true,
		Description: fmt.Sprintf("random relay-side schedule %d, killed from outside: %d messages, %d supervised relays, one link fault", seed, all, relays),
		Fault:       fmt.Sprintf("%v; %s %s on %s after %s for %s", desc, link.Kind, link.Direction, link.Link, after, hold),
		Outcome:     "every message delivered once at the handset",
		Steps:       steps,
	}
}

// drawLinkFault draws a random peer schedule's one link fault: the relays'
// broker link down, 1.5 s confirm latency, or their Postgres link
// stalled, put in place after up to 1.5 s for 0.5–3 s.
func drawLinkFault(rng *rand.Rand) (link faults.Spec, after, hold time.Duration) {
	link = []faults.Spec{
		linkDown("rabbitmq-relay"),
		latency("rabbitmq-relay", rig.Downstream, 1500*time.Millisecond),
		stall("postgres-relay", rig.Upstream),
	}[rng.IntN(3)]
	after = time.Duration(rng.IntN(1500)) * time.Millisecond
	hold = time.Duration(500+rng.IntN(2500)) * time.Millisecond
	return link, after, hold
}
