package catalogue

import (
	"time"

	"github.com/outboxchaos/outboxchaos/checker"
	"github.com/outboxchaos/outboxchaos/faults"
	"github.com/outboxchaos/outboxchaos/history"
	"github.com/outboxchaos/outboxchaos/scenarios/scenario"
	"github.com/outboxchaos/outboxchaos/system/notification"

	kp "github.com/outboxchaos/outboxchaos/system/killpoint"
)

// consumerCases are the peer cases on the consumer side: any peer runs
// them, through our worker or through a consumer of its own that declares
// the point (peers.Features.HasWorkerPoint).
func consumerCases(awaitLong func(scenario.Cond) scenario.Step) []*scenario.Scenario {
	return []*scenario.Scenario{{
		Name: "peer-consumer-crash-after-send", Row: "peer",
		Description: "the consumer dies after the vendor accepted a message, before it recorded the send or acked",
		Fault:       "kill-point worker.after-send (SIGKILL) in worker-1; worker-2 started after it died",
		Outcome:     "every message delivered once at the handset; the copy the dead consumer held comes back",
		Steps: []scenario.Step{
			Enqueue(), StartWith("worker", Kill(kp.WorkerAfterSend)), start("cleanup", "relay"),
			awaitLong(killed("worker-1")), start("worker"), awaitLong(ledger(6)),
		},
	}}
}

// jetStreamCases are the cases of a peer that publishes to JetStream
// (peers.Features.JetStream): its broker killed, frozen and restarted, its
// links cut, and a republish forced past the broker's duplicate window.
// Every window is forced by an event: a publish the relay logged as
// failed, a pod frozen at its pause-point, the broker's own answer that
// it forgot a probe id (dedup_expired) — never by a sleep.
func jetStreamCases(awaitLong func(scenario.Cond) scenario.Step) []*scenario.Scenario {
	node := func(kind string) faults.Spec { return faults.Spec{Kind: kind, Node: faults.NodeNATS} }
	// brokerOut puts a broker fault in place once the first five messages
	// reached a handset, enqueues five more under it and holds it until a
	// relay logged a failed publish of one of them, then recovers it.
	brokerOut := func(name, desc, fault string, f faults.Spec) *scenario.Scenario {
		return &scenario.Scenario{
			Name: name, Row: "peer", PerKind: 5, Kinds: []notification.Kind{notification.GradeRenewal, notification.MonthlyAwardsWinning},
			Description: desc, Fault: fault,
			Outcome: "each delivered once; republishes stopped by the broker's dedup or the consumer's table",
			Steps: []scenario.Step{
				start("worker", "cleanup", "relay"),
				{Do: "enqueue", Kinds: []notification.Kind{notification.GradeRenewal}},
				note(awaitLong(ledger(5)), "relay and consumer hold live JetStream connections"),
				{Do: "during", Faults: fs(f), Cond: &scenario.Cond{Any: publishOutcome(false)}, Timeout: faults.Duration(20 * time.Second),
					Steps: []scenario.Step{{Do: "enqueue", Kinds: []notification.Kind{notification.MonthlyAwardsWinning}}}},
				awaitLong(ledger(10)),
			},
		}
	}
	return []*scenario.Scenario{
		{
			Name: "peer-js-resend-outside-window", Row: "peer", Kinds: []notification.Kind{notification.GradeRenewal},
			Description: "the relay published and froze before its commit, holding the row lock; it dies only once JetStream forgot the id, so the republish is stored again",
			Fault:       "pause-point relay.before-mark in relay-1; once JetStream's duplicate window passed (dedup_expired), SIGKILL relay-1 and start relay-2",
			Outcome:     "delivered once: the broker stores the republish (not a duplicate) and the consumer's table stops it",
			Steps: []scenario.Step{
				Enqueue(), start("worker", "cleanup"),
				StartWith("relay", faults.Spec{Kind: faults.KindPausePoint, Point: kp.RelayBeforeMark}),
				note(awaitLong(scenario.Cond{All: []scenario.Cond{{Paused: "relay-1"}, {Ledger: 1}}}), "relay-1 published and holds its transaction open; the consumer sent the message"),
				note(awaitLong(scenario.Cond{DedupExpired: true}), "the broker itself says the window passed: a probe id published now is stored again"),
				Inject(faults.Spec{Kind: faults.KindKill, Pod: "relay-1"}),
				start("relay"),
				awaitLong(PodEvent(history.AlreadyProcessed, "worker-", 1)),
			},
			Expect: rules(checker.Rule{Rule: "events", Event: history.AlreadyProcessed, Pod: "worker-", N: 1}),
		},
		brokerOut("peer-js-crash", "JetStream is SIGKILLed mid-stream and started again on the same port and store",
			"crash node nats (SIGKILL) once 5 messages reached a handset; 5 more enqueued; started again once a relay logged a failed publish",
			node(faults.KindCrash)),
		brokerOut("peer-js-restart", "JetStream is stopped gracefully mid-stream and started again",
			"restart node nats (SIGTERM) once 5 messages reached a handset; 5 more enqueued; started again once a relay logged a failed publish",
			node(faults.KindRestart)),
		brokerOut("peer-js-freeze", "JetStream is frozen mid-stream: connections stay open, nothing answers",
			"freeze node nats (SIGSTOP) once 5 messages reached a handset; 5 more enqueued; SIGCONT once a relay logged a failed publish",
			node(faults.KindFreeze)),
		brokerOut("peer-js-relay-link-cut", "the relays' link to JetStream is cut mid-stream and refused until a publish fails",
			"nats-relay down once 5 messages reached a handset; 5 more enqueued; up again once a relay logged a failed publish",
			linkDown("nats-relay")),
		{
			Name: "peer-js-consumer-link-cut", Row: "peer", PerKind: 5,
			Description: "the consumer's link to JetStream is cut mid-stream until the consumer noticed",
			Fault:       "nats-worker down after the 5th message reached a handset, until worker-1 logged the lost connection",
			Outcome:     "each delivered once; copies the consumer could not ack come back and meet its table",
			Steps: []scenario.Step{
				Enqueue(), start("worker", "cleanup", "relay"), awaitLong(ledger(5)),
				{Do: "during", Faults: fs(linkDown("nats-worker")), Cond: &scenario.Cond{Any: []scenario.Cond{{Event: &scenario.EventCond{Name: history.Disconnect, Pod: "worker-", Fresh: true}}, {Ledger: 30}}},
					Timeout: faults.Duration(20 * time.Second)},
				awaitLong(ledger(30)),
			},
		},
	}
}
