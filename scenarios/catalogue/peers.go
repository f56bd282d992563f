package catalogue

import (
	"fmt"
	"strings"
	"time"

	"github.com/outboxchaos/outboxchaos/checker"
	"github.com/outboxchaos/outboxchaos/faults"
	"github.com/outboxchaos/outboxchaos/history"
	"github.com/outboxchaos/outboxchaos/peers"
	"github.com/outboxchaos/outboxchaos/rig"
	"github.com/outboxchaos/outboxchaos/scenarios/scenario"
	"github.com/outboxchaos/outboxchaos/system/notification"

	kp "github.com/outboxchaos/outboxchaos/system/killpoint"
)

// PeerCases are the relay-side cases written so that any relay under test
// (the registry peers, ours among them) runs them unchanged: their conditions
// read only what every implementation shows — handset counts, kill-points,
// copies at the worker, the seam's publish events — and their only rules
// are the contract's. The peers matrix runs each against each
// implementation (cmd/outboxchaos peers).
func PeerCases() []*scenario.Scenario {
	long := faults.Duration(60 * time.Second)
	awaitLong := func(c scenario.Cond) scenario.Step { return within(Await(c), time.Duration(long)) }
	// relayOneBegan: relay-1 sent an AMQP method on its link (a heartbeat
	// aside), counted before any fault on the link acts.
	relayOneBegan := traffic("rabbitmq-relay", rig.Method)
	relayKill := func(name, point, desc string) *scenario.Scenario {
		return &scenario.Scenario{
			Name: name, Row: "peer", Description: desc,
			Fault:   "kill-point " + point + " (SIGKILL) in relay-1; relay-2 started after it died",
			Outcome: "every message delivered once at the handset; copies at the broker allowed",
			Steps: []scenario.Step{
				Enqueue(), start("worker", "cleanup"), StartWith("relay", Kill(point)),
				awaitLong(killed("relay-1")), start("relay"), awaitLong(ledger(6)),
			},
		}
	}
	out := []*scenario.Scenario{
		{
			Name: "peer-happy", Row: "peer", Description: "no fault: six messages through the relay under test",
			Fault: "none", Outcome: "each delivered once", AllowUnfired: true,
			Steps: []scenario.Step{Enqueue(), start("worker", "cleanup", "relay"), awaitLong(ledger(6))},
		},
		relayKill("peer-crash-after-claim", kp.RelayAfterClaim, "the relay dies after it took messages from its outbox, before publishing"),
		relayKill("peer-crash-after-publish", kp.RelayAfterPublish, "the relay dies after publishing, before the confirms came back"),
		relayKill("peer-crash-after-confirm", kp.RelayAfterConfirm, "the relay dies once the broker confirmed (without confirms: once the publish returned)"),
		relayKill("peer-crash-before-mark", kp.RelayBeforeMark, "the relay dies right before it writes \"done\" for published messages"),
		{
			Name: "peer-confirm-late", Row: "peer",
			Description: "confirms arrive 1.5 s late, past our 600 ms deadline (a peer without a deadline waits)",
			Fault:       "Toxiproxy latency 1.5 s on RabbitMQ → relay for 3 s while five more messages are relayed",
			Outcome:     "each delivered once; late confirms may cause copies at the broker",
			Steps: []scenario.Step{
				start("worker", "cleanup", "relay"),
				{Do: "enqueue", Kinds: []notification.Kind{notification.GradeRenewal}},
				note(awaitLong(ledger(1)), "the relay holds a live broker connection"),
				note(scenario.Step{Do: "during", Faults: fs(latency("rabbitmq-relay", rig.Downstream, 1500*time.Millisecond)), For: faults.Duration(3 * time.Second),
					Steps: []scenario.Step{Enqueue()}}, "held 3 s: removing a latency toxic lets what it held through at once, so it must outlast the confirms it delays"),
				awaitLong(ledger(6)),
			},
		},
		{
			Name: "peer-publish-lost", Row: "peer",
			Kinds:       []notification.Kind{notification.GradeRenewal, notification.MonthlyAwardsWinning},
			Description: "the relay's publish frames are dropped on the way to RabbitMQ: only a confirm can tell",
			Fault:       "stall on relay → RabbitMQ (data dropped) from before the second message is enqueued until the relay logged that publish's outcome",
			Outcome:     "the lost publish is a failure and is retried; delivered once",
			Steps: []scenario.Step{
				start("worker", "cleanup", "relay"),
				{Do: "enqueue", Kinds: []notification.Kind{notification.GradeRenewal}},
				note(awaitLong(ledger(1)), "the relay holds a live broker connection"),
				{Do: "during", Faults: fs(stall("rabbitmq-relay", rig.Upstream)), Cond: &scenario.Cond{Any: publishOutcome(true)}, Timeout: long,
					Steps: []scenario.Step{{Do: "enqueue", Kinds: []notification.Kind{notification.MonthlyAwardsWinning}}}},
			},
		},
		{
			Name: "peer-unroutable", Row: "peer",
			Kinds:       []notification.Kind{notification.GradeRenewal, notification.MonthlyAwardsWinning},
			Description: "the main queue loses its binding while the relay publishes: a mandatory publish comes back returned, and is still confirmed",
			Fault:       "the operator unbinds the main queue from before the second message is enqueued until the relay logged that publish's outcome",
			Outcome:     "a returned publish is a failure and is published again once the binding is back; delivered once (a relay that trusts the confirm alone, or publishes without mandatory, loses it silently)",
			Steps: []scenario.Step{
				start("worker", "cleanup", "relay"),
				{Do: "enqueue", Kinds: []notification.Kind{notification.GradeRenewal}},
				note(awaitLong(ledger(1)), "the relay holds a live broker connection"),
				{Do: "during", Faults: fs(faults.Spec{Kind: faults.KindUnbind}), Cond: &scenario.Cond{Any: publishOutcome(true)}, Timeout: long,
					Steps: []scenario.Step{{Do: "enqueue", Kinds: []notification.Kind{notification.MonthlyAwardsWinning}}}},
				awaitLong(ledger(2)),
			},
		},
		{
			Name: "peer-queue-full", Row: "peer", Kinds: []notification.Kind{notification.GradeRenewal}, PerKind: 3,
			Config: map[string]string{"queue-max-length": "2"},
			// The fault is the queue's own limit, not an injection.
			AllowUnfired: true,
			Description:  "the main queue is over its length limit when the relay publishes (x-max-length 2, reject-publish): RabbitMQ nacks",
			Fault:        "queue-max-length 2; no worker consumes while three messages fill the queue to its limit or past it and three more are published",
			Outcome:      "a nack is a failure: the refused messages are published again once the worker made room; each delivered once (a relay that takes a nack for a confirm loses them silently)",
			Steps: []scenario.Step{
				start("relay"), Enqueue(),
				note(awaitLong(anyOf(scenario.Cond{Queue: &scenario.QueueCond{Queue: "main", N: 2}}, scenario.Cond{Queue: &scenario.QueueCond{Queue: "main", N: 3}})),
					"the queue is at its limit (a quorum queue may take a pipelined batch past it)"),
				note(scenario.Step{Do: "during", Cond: &scenario.Cond{Any: publishOutcome(true)}, Timeout: long, Steps: []scenario.Step{enqueueN(6)}},
					"three more are enqueued, and the relay logged a publish's outcome: the queue refuses those past its limit"),
				start("worker", "cleanup"), awaitLong(ledger(6)),
			},
		},
		{
			Name: "peer-broker-cut", Row: "peer", PerKind: 5,
			Description: "the relay's RabbitMQ connection is cut mid-stream and refused until a publish fails",
			Fault:       "rabbitmq-relay down after the 5th message reached a handset",
			Outcome:     "the relay reconnects; each delivered once",
			Steps: []scenario.Step{
				Enqueue(), start("worker", "cleanup", "relay"), awaitLong(ledger(5)),
				{Do: "during", Faults: fs(linkDown("rabbitmq-relay")), Cond: &scenario.Cond{Any: []scenario.Cond{publishFailed(), {Ledger: 30}}}, Timeout: faults.Duration(10 * time.Second)},
				awaitLong(ledger(30)),
			},
		},
		{
			Name: "peer-pg-cut", Row: "peer", PerKind: 5,
			Description: "the relay's Postgres connections are cut mid-stream, once",
			Fault:       "postgres-relay link down after the 5th message reached a handset, restored at once",
			Outcome:     "each delivered once",
			Steps: []scenario.Step{
				Enqueue(), start("worker", "cleanup", "relay"), awaitLong(ledger(5)),
				{Do: "during", Faults: fs(linkDown("postgres-relay")), Cond: &scenario.Cond{Ledger: 5}},
				awaitLong(ledger(30)),
			},
		},
		{
			Name: "peer-pg-stall", Row: "peer", PerKind: 5,
			Description: "Postgres stops answering the relay for 2 s (requests swallowed), then resumes",
			Fault:       "stall on relay → Postgres (postgres-relay) for 2 s after the 5th message reached a handset",
			Outcome:     "each delivered once",
			Steps: []scenario.Step{
				Enqueue(), start("worker", "cleanup", "relay"), awaitLong(ledger(5)),
				{Do: "during", Faults: fs(stall("postgres-relay", rig.Upstream)), For: faults.Duration(2 * time.Second)},
				awaitLong(ledger(30)),
			},
		},
		{
			Name: "peer-overlap", Row: "peer", PerKind: 10,
			Description: "three relays on one outbox of 60 messages",
			Fault:       "three relay pods started together",
			Outcome:     "each delivered once; copies at the broker counted", AllowUnfired: true,
			Steps: []scenario.Step{Enqueue(), start("worker", "cleanup", "relay", "relay", "relay"), awaitLong(ledger(60))},
		},
		{
			Name: "peer-stale", Row: "peer",
			Kinds:       []notification.Kind{notification.GradeRenewal, notification.MonthlyAwardsWinning},
			Description: "relay-1's confirms (and every other broker answer) are held back for 10 s, its confirm deadline 60 s, while relay-2 on another link may take over",
			Fault:       "latency 1 h on RabbitMQ → relay-1 for 10 s, from before five messages are enqueued; relay-2 started on the worker's link once relay-1 began to publish them",
			Outcome:     "each delivered once; the stale relay's late writes harm nothing (whether relay-2 took over shows in dup@broker and the timeline)",
			Steps: []scenario.Step{
				start("worker", "cleanup"),
				startEnv("relay", "OUTBOXCHAOS_CONFIRM_TIMEOUT=60s"),
				{Do: "enqueue", Kinds: []notification.Kind{notification.GradeRenewal}},
				note(awaitLong(ledger(1)), "relay-1 holds a live broker connection"),
				{Do: "during", Faults: fs(latency("rabbitmq-relay", rig.Downstream, time.Hour)), For: faults.Duration(10 * time.Second),
					Steps: []scenario.Step{
						note(scenario.Step{Do: "during", Cond: &relayOneBegan, Timeout: long,
							Steps: []scenario.Step{{Do: "enqueue", Kinds: []notification.Kind{notification.MonthlyAwardsWinning}, PerKind: 5}}},
							"relay-1 took the new rows and began to publish them (the first AMQP method it sends: its publish, or the channel its client opens for it); what RabbitMQ answers it is held back"),
						{Do: "start", Roles: []string{"relay"}, Link: "rabbitmq-worker"},
					}},
				awaitLong(ledger(6)),
			},
		},
		{
			Name: "peer-rescuer-race", Row: "peer", Kinds: []notification.Kind{notification.GradeRenewal},
			Description:  "River only: the rescuer fetches a running job as stuck, the job completes, then the rescue is written (River #1302)",
			Fault:        "OUTBOXCHAOS_PEER_RESCUE_RACE=1 in relay-1: its tracer holds the job until the rescuer fetched it, and the rescuer until the completion is written",
			Outcome:      "delivered once at the handset; a relay that overwrites the completion works the job again (a copy at the broker)",
			AllowUnfired: true,
			Steps: []scenario.Step{
				start("worker", "cleanup"),
				startEnv("relay", "OUTBOXCHAOS_PEER_RESCUE_RACE=1"),
				Enqueue(),
				note(scenario.Step{Do: "await", Cond: &scenario.Cond{Any: []scenario.Cond{PodEvent(history.RaceCompleted, "relay-1", 1), PodEvent(history.RaceTimeout, "relay-1", 1)}},
					Timeout: faults.Duration(80 * time.Second)}, "the rescuer runs every 30 s: the window comes within one interval"),
				awaitLong(ledger(1)),
			},
			Expect: rules(checker.Rule{Rule: "confirmed-publishes", Msg: 1, N: 1}),
		},
	}
	out = append(out, outsideKillCases(awaitLong)...)
	out = append(out, consumerCases(awaitLong)...)
	out = append(out, jetStreamCases(awaitLong)...)
	for _, seed := range peerRandomSeeds {
		out = append(out, peerRandom(seed))
	}
	for _, seed := range peerRandomSeeds {
		out = append(out, peerRandomOutside(seed))
	}
	// Drawn across a relay's own deadlines: listed as ours draws them,
	// drawn anew for each relay when it runs (ForPeer).
	if ours, err := peers.Lookup(peers.Ours); err == nil {
		for _, seed := range peerRandomSeeds {
			out = append(out, peerDeadline(seed, ours))
		}
	}
	// River's rescuer runs every 30 s (not configurable): a job a killed
	// relay left running is rescued and worked again only at the first
	// tick RescueStuckJobsAfter past its attempt, so a run may settle up
	// to about 33 s after the last message reached a handset. 30 s raced
	// that tick.
	for _, s := range out {
		s.Settle = peerSettle
	}
	return out
}

// outsideKillCases kill the relay under test with SIGKILL from outside, at
// the four moments of its seam, timed by nothing but what the harness sees
// on its links (rig.Message counts): a relay that declares no
// kill-points, in any language, is killed where the kill-point cases kill
// ours. A relay's confirms are held back by a latency on what RabbitMQ
// sends it, and its Postgres requests (or their answers) by a stall, so
// each kill lands between two steps the relay cannot take alone; relay-1
// is given a 60 s confirm deadline, so that holding its confirms does not
// time its publishes out instead. Then the faults are taken away and
// relay-2 finishes the batch.
func outsideKillCases(awaitLong func(scenario.Cond) scenario.Step) []*scenario.Scenario {
	holdPublishes := stall("rabbitmq-relay", rig.Upstream)
	holdConfirms := latency("rabbitmq-relay", rig.Downstream, time.Hour)
	holdStatements := stall("postgres-relay", rig.Upstream)
	holdAnswers := stall("postgres-relay", rig.Downstream)
	long := faults.Duration(60 * time.Second)
	// waitFor runs steps and waits, from before them, for c.
	waitFor := func(c scenario.Cond, steps ...scenario.Step) scenario.Step {
		return scenario.Step{Do: "during", Cond: &c, Timeout: long, Steps: steps}
	}
	confirmed := []scenario.Step{
		Inject(holdConfirms), Enqueue(),
		note(awaitLong(ledger(2)), "a message of the batch reached a handset: published, its confirm held back"),
	}
	outside := func(name, desc, fault, outcome string, held []faults.Spec, steps ...scenario.Step) *scenario.Scenario {
		all := []scenario.Step{
			start("worker", "cleanup"),
			startEnv("relay", "OUTBOXCHAOS_CONFIRM_TIMEOUT=60s"),
			{Do: "enqueue", Kinds: []notification.Kind{notification.GradeRenewal}},
			note(awaitLong(ledger(1)), "relay-1 holds live connections to both"),
		}
		all = append(all, steps...)
		all = append(all,
			Inject(faults.Spec{Kind: faults.KindKill, Pod: "relay-1"}),
			awaitLong(exitedPod("relay-1")),
			recoverFaults(held...),
			start("relay"), awaitLong(ledger(6)))
		return &scenario.Scenario{Name: name, Row: "peer", Description: desc, Fault: fault, Outcome: outcome, Steps: all}
	}
	return []*scenario.Scenario{
		outside("peer-kill-after-claim",
			"the relay is killed from outside once it took messages and began to publish, nothing of which reached RabbitMQ",
			"stall on relay → RabbitMQ, five messages enqueued, SIGKILL relay-1 at the first AMQP method it sends on the link (its publish, or the channel its client opens for it); relay-2 started",
			"each delivered once: a row the relay marked done before its publish reached the broker is lost silently",
			[]faults.Spec{holdPublishes},
			Inject(holdPublishes),
			note(waitFor(traffic("rabbitmq-relay", rig.Method), Enqueue()), "the relay claimed and began to publish: a client that opens a channel per publish sends that first, and it is swallowed"),
		),
		outside("peer-kill-after-publish",
			"the relay is killed from outside after its publish reached RabbitMQ, before the confirm reached the relay",
			"latency 1 h on RabbitMQ → relay, five messages enqueued, SIGKILL relay-1 once one of them reached a handset; relay-2 started",
			"each delivered once: relay-2 publishes the unconfirmed rows again and the inbox absorbs the copies",
			[]faults.Spec{holdConfirms},
			confirmed...,
		),
		outside("peer-kill-after-confirm",
			"the relay is killed from outside after the confirms reached it, as its next Postgres statement (the \"done\" write) is sent, before Postgres sees it",
			"latency 1 h on RabbitMQ → relay; once a message reached a handset, stall on relay → Postgres, the latency taken away, SIGKILL relay-1 at its first statement on the link; relay-2 started",
			"each delivered once: the confirmed rows were never marked, relay-2 publishes them again and the inbox absorbs the copies",
			[]faults.Spec{holdStatements},
			append(append([]scenario.Step(nil), confirmed...),
				Inject(holdStatements),
				note(waitFor(traffic("postgres-relay", rig.Statement), recoverFaults(holdConfirms)), "the confirms are let through: the relay's next statement is swallowed"),
			)...,
		),
		outside("peer-kill-after-mark",
			"the relay is killed from outside after its \"done\" write reached Postgres, before the answer reached the relay",
			"latency 1 h on RabbitMQ → relay; once a message reached a handset, stall on Postgres → relay, the latency taken away, SIGKILL relay-1 once its next statement went through; relay-2 started",
			"each delivered once: the write committed or not, relay-2 publishes only what is not marked, and the inbox absorbs any copy",
			[]faults.Spec{holdAnswers},
			append(append([]scenario.Step(nil), confirmed...),
				Inject(holdAnswers),
				note(waitFor(traffic("postgres-relay", rig.Statement), recoverFaults(holdConfirms)), "the confirms are let through: the relay's next statement reaches Postgres, its answer is swallowed"),
			)...,
		),
	}
}

// peerSettle is the peer cases' quiescence bound: two rescuer intervals
// and margin.
const peerSettle = faults.Duration(80 * time.Second)

// peerCaseWindows names the peer-specific window a case forces: it
// applies only to peers declaring it (peers.Features.Windows).
var peerCaseWindows = map[string]string{
	"peer-rescuer-race": "river-rescuer-race",
}

// PeerCaseApplies reports whether case s can run against peer p, from what
// the case uses and what the peer declares (peers.Features) — no peer
// names. Each fault of the case says itself whether it can act on the
// peer (faults.Applies: a point the peer's relay or consumer does not
// declare, a broker or JetStream fault on a relay that publishes nothing
// there); beyond its faults, a bound on the main queue for a relay that
// publishes nothing to RabbitMQ, a wait on JetStream's duplicate window
// for a peer without one, a wait for publish outcomes a relay does not
// log, or a window only another peer has, is not applicable (and why).
func PeerCaseApplies(s *scenario.Scenario, p peers.Peer) (bool, string) {
	if strings.HasPrefix(s.Name, peerDeadlinePrefix) && len(crossable(p)) == 0 {
		return false, fmt.Sprintf("is drawn across the relay's declared deadlines, and %s declares none a run can cross (a duration of at most %s)", p.Name, MaxDrawn)
	}
	s = ForPeer(s, p)
	f := p.Features
	if w, ok := peerCaseWindows[s.Name]; ok && !f.HasWindow(w) {
		return false, fmt.Sprintf("forces the %s window, which %s does not declare", w, p.Name)
	}
	if s.Config["queue-max-length"] != "" && !f.Broker {
		return false, fmt.Sprintf("bounds RabbitMQ's main queue, and %s publishes nothing to RabbitMQ", p.Name)
	}
	relay := faults.Relay{Name: p.Name, Broker: f.Broker, JetStream: f.JetStream != nil, Consumer: f.Consumer,
		NoConfirms: f.NoConfirms, ChannelPerPublish: f.ChannelPerPublish, RelayPoint: f.HasKillPoint, WorkerPoint: f.HasWorkerPoint}
	var why string
	walkSteps(s.Steps, func(st scenario.Step) {
		for _, sp := range st.Faults {
			if why == "" {
				_, why = faults.Applies(sp, relay, st.Do == "inject")
			}
		}
		if why == "" && st.Cond != nil && waitsForPublish(*st.Cond) && !f.PublishEvents {
			why = fmt.Sprintf("waits for a publish outcome, which %s does not log", p.Name)
		}
		if why == "" && st.Cond != nil && waitsForDedup(*st.Cond) && f.JetStream == nil {
			why = fmt.Sprintf("waits for JetStream's duplicate window to pass, and %s has no JetStream", p.Name)
		}
	})
	return why == "", why
}

// walkSteps calls fn on every step, nested ones included.
func walkSteps(steps []scenario.Step, fn func(scenario.Step)) {
	for _, st := range steps {
		fn(st)
		walkSteps(st.Steps, fn)
	}
}

// waitsForPublish reports whether c waits for a "publish" event.
func waitsForPublish(c scenario.Cond) bool {
	if c.Event != nil && c.Event.Name == "publish" {
		return true
	}
	for _, sub := range append(append([]scenario.Cond(nil), c.Any...), c.All...) {
		if waitsForPublish(sub) {
			return true
		}
	}
	return false
}

// waitsForDedup reports whether c waits for JetStream's duplicate window.
func waitsForDedup(c scenario.Cond) bool {
	if c.DedupExpired {
		return true
	}
	for _, sub := range append(append([]scenario.Cond(nil), c.Any...), c.All...) {
		if waitsForDedup(sub) {
			return true
		}
	}
	return false
}

// publishFailed: a relay logged a failed publish since the step began.
func publishFailed() scenario.Cond { return scenario.Cond{Any: publishOutcome(false)} }

// publishOutcome: a relay logged a failed (or, withConfirmed, any)
// publish outcome since the step began.
func publishOutcome(withConfirmed bool) []scenario.Cond {
	outcomes := []string{history.OutcomeFailed, history.OutcomeWriteFailed, history.OutcomeChannelClosed, history.OutcomeTimedOut,
		history.OutcomeNacked, history.OutcomeReturned}
	if withConfirmed {
		outcomes = append(outcomes, history.OutcomeConfirmed)
	}
	var any []scenario.Cond
	for _, o := range outcomes {
		any = append(any, scenario.Cond{Event: &scenario.EventCond{Name: history.Publish, Attrs: map[string]string{history.KeyOutcome: o}, Fresh: true}})
	}
	return any
}

// LookupPeerCase returns the peer case called name.
func LookupPeerCase(name string) (*scenario.Scenario, bool) {
	for _, s := range PeerCases() {
		if s.Name == name {
			return s, true
		}
	}
	return nil, false
}

// IsPeerCase reports whether name is a peer case.
func IsPeerCase(name string) bool { return strings.HasPrefix(name, "peer-") }
