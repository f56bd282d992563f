package catalogue

import (
	"time"

	"github.com/outboxchaos/outboxchaos/fakevendor"
	"github.com/outboxchaos/outboxchaos/faults"
	"github.com/outboxchaos/outboxchaos/history"
	"github.com/outboxchaos/outboxchaos/rig"
	"github.com/outboxchaos/outboxchaos/scenarios/scenario"
	"github.com/outboxchaos/outboxchaos/system/canary"
)

// Infra returns the infrastructure scenarios: real process death
// and freezes of the broker and the database, and a three-node quorum
// cluster losing its queue leader. Each runs on containers of its own
// (Scenario.Infra; scenarios/infra starts them), never on the shared
// services, so it is not part of Named.
func Infra() []*scenario.Scenario {
	return []*scenario.Scenario{
		{
			Name: "broker-crash-mid-publish", Row: "infra", Infra: "single",
			// Every window is forced: confirms held in the link
			// never time out by the clock (the confirm timeout outlasts the
			// run's 4 min bound), and the relay's heartbeat (10 min, which
			// the infra broker no longer caps at 60 s) outlasts it too, so
			// the relay cannot drop its connection on its own before the
			// crash, which raced the steps under load with a 2 s heartbeat.
			// It learns of the dead broker when the harness cuts its link.
			// The worker keeps the 2 s heartbeat; it reconnects after the
			// restart, whenever it notices.
			Config:      map[string]string{"confirm-timeout": "5m", "amqp-heartbeat": "2s"},
			Description: "RabbitMQ is SIGKILLed while the relay awaits the confirms of a published batch",
			Fault:       "confirms held in the relay's link; then the broker crashes (SIGKILL) and restarts; then the relay's link is cut",
			Outcome:     "the unconfirmed batch is indefinite: republished with the same message_ids; what the broker had persisted comes back as copies the inbox blocks; each sent once",
			Steps: []scenario.Step{
				Enqueue(), start("worker", "cleanup"), startEnv("relay", longHeartbeat),
				note(Await(ledger(6)), "the relay holds a live broker connection"),
				during(fs(stall("rabbitmq-relay", rig.Downstream)), relayChannelClosed,
					enqueueN(5),
					note(Await(ledger(7)), "the next batch reached the broker (a phone has one), its confirms are held: the relay awaits them"),
					during(fs(crash("rabbitmq")), scenario.Cond{Event: &scenario.EventCond{Name: history.Reconnect, Pod: "worker-", Fresh: true}}),
					note(during(fs(linkDown("rabbitmq-relay")), relayChannelClosed),
						"the broker is back; the relay's connection to the dead one is cut: its awaited batch is indefinite")),
				Await(outboxRows("PUBLISHED", 30)),
				note(Await(copiesSeen(1)), "the broker's persisted copy of a republished message reached the worker"),
			},
			Expect: rules(allOnce, copies(1)),
		},
		{
			Name: "broker-crash-queued", Row: "infra", Infra: "single",
			// One message waits in the retry queue for 30 s: through the
			// crash, then back to the main queue. RabbitMQ's TTL is a real
			// timer no step can hold (a quorum queue fixes a message's expiry
			// when it is enqueued), so the expectation holds on both paths
			//: the crash meets 12 in main and 1 in retry, or 13 in
			// main when the steps before it outlasted the TTL.
			Config:      map[string]string{"retry-ttl": "30s", "in-listener-retries": "0", "amqp-heartbeat": "1s"},
			Description: "RabbitMQ is SIGKILLed with 12 messages in the main queue and one in the retry queue",
			Fault:       "vendor 429 for notification-outbox-1 (to the retry queue); worker stopped; 12 published; broker SIGKILLed and restarted",
			Outcome:     "persistent messages in quorum queues survive: after the restart the queues hold all 13; each sent once",
			Steps: []scenario.Step{
				Inject(vendorMode(fakevendor.Status429, 1, 1)),
				Enqueue(), pipeline(),
				note(Await(queued("retry", 1)), "the 429 sent notification-outbox-1 to the retry queue"),
				Await(ledger(5)), stop("worker-1"),
				enqueueN(3), Await(outboxRows("PUBLISHED", 18)),
				note(Await(anyOf(allOf(queued("main", 12), queued("retry", 1)), allOf(queued("main", 13), queued("retry", 0)))),
					"the 12 are queued; the retry message is in the retry queue, or already back in main by its TTL"),
				during(fs(crash("rabbitmq")), scenario.Cond{Event: &scenario.EventCond{Name: history.PublishFailed, Pod: "relay-", Fresh: true}},
					note(enqueueN(4), "six more rows while the broker is down: the relay cannot publish them")),
				note(Await(anyOf(allOf(queued("main", 18), queued("retry", 1)), allOf(queued("main", 19), queued("retry", 0)))),
					"the 12 and the retry message survived the crash (the retry one may have moved back to main by its TTL, before or after it); the six went out after it"),
				start("worker"),
				Await(ledger(24)),
			},
			Expect: rules(allOnce),
		},
		{
			Name: "broker-freeze", Row: "infra", PerKind: 2, Infra: "single",
			// The worker's 1 s heartbeat drops the frozen broker; the
			// relay's (10 min) outlasts the run, so its publishes into the
			// frozen broker are always left indefinite by their confirm
			// timeout. With the relay on 1 s too, a loaded harness could
			// let the heartbeat drop the relay's connection before the new
			// rows were claimed: nothing was in flight.
			Config:      map[string]string{"amqp-heartbeat": "1s"},
			Description: "RabbitMQ is frozen (docker pause) longer than the confirm timeout and the worker's heartbeat",
			Fault:       "broker paused until a publish into it was left indefinite (its confirm timed out) and the worker dropped its silent connection (heartbeat), then thawed",
			Outcome:     "timed-out publishes are republished; the worker reconnects; whatever the frozen broker still took in arrives as copies the inbox blocks; each sent once",
			Steps: []scenario.Step{
				Enqueue(), start("worker", "cleanup"), startEnv("relay", longHeartbeat), Await(ledger(12)),
				during(fs(freeze("rabbitmq")), allOf(
					scenario.Cond{Event: &scenario.EventCond{Name: history.Publish, Pod: "relay-1", Attrs: map[string]string{history.KeyOutcome: history.OutcomeTimedOut}, Fresh: true}},
					scenario.Cond{Event: &scenario.EventCond{Name: history.Reconnect, Pod: "worker-", Fresh: true}}),
					note(enqueueN(4), "twelve more rows: the relay publishes them into the frozen broker")),
				Await(outboxRows("PUBLISHED", 24)),
			},
			Expect: rules(allOnce),
		},
		{
			Name: "quorum-leader-loss", Row: "infra", PerKind: 5, Infra: "cluster",
			Config:      map[string]string{"amqp-heartbeat": "1s"},
			Description: "a three-node RabbitMQ cluster loses the node leading the main quorum queue mid-stream, then the node returns",
			Fault:       "SIGKILL of the main queue's leader after the 5th message reached a phone; it restarts and rejoins on recover",
			Outcome:     "the two live nodes elect a leader and keep every persisted message; relay and worker reconnect to a live node; all 60 are sent once while the node is gone",
			Steps: []scenario.Step{
				Enqueue(), pipeline(), Await(ledger(5)),
				// While the queue has no leader the broker nacks publishes
				// and the rows back off (one CI run needed 34.9 s, past the
				// default 30 s, before the publisher replaced its channel
				// after a nack); 90 s is reached only if the messages never
				// come.
				within(during(fs(faults.Spec{Kind: faults.KindLeaderLoss}), allOf(
					scenario.Cond{Event: &scenario.EventCond{Name: history.Reconnect, Pod: "worker-", Fresh: true}}, ledger(60)),
					note(enqueueN(10), "thirty more rows, published to a live node")), 90*time.Second),
				Await(outboxRows("PUBLISHED", 60)),
			},
			Expect: rules(allOnce),
		},
		{
			Name: "postgres-crash-mid-claim", Row: "infra", Infra: "single",
			Description: "PostgreSQL is SIGKILLed while the relay's claim UPDATE runs in it",
			Fault:       "the outbox held under an EXCLUSIVE lock so the claim waits inside Postgres; then the postmaster is SIGKILLed and restarted",
			Outcome:     "the claim never committed: the rows stay PENDING with no lease; the relay's next run after the restart claims them; each sent once",
			Steps: []scenario.Step{
				Enqueue(), start("worker", "cleanup"),
				during(fs(holdTable("outbox")), PodEvent(history.RunFailed, "relay-1", 1),
					start("relay"),
					note(Await(scenario.Cond{Blocked: "relay-1"}), "the relay's claim waits on the lock, inside Postgres"),
					during(fs(crash("postgres")), PodEvent(history.RunFailed, "relay-1", 1))),
				Await(outboxRows("PUBLISHED", 6)),
			},
			Expect: rules(allOnce),
		},
		{
			Name: "postgres-crash-mid-inbox-claim", Row: "infra", Infra: "single",
			// A requeue waits 500 ms, so the redeliveries during the
			// outage stay far below the delivery limit.
			Config:      map[string]string{"in-listener-delay": "500ms"},
			Description: "PostgreSQL is SIGKILLed while the worker's claim INSERT runs in it",
			Fault:       "the inbox held under an EXCLUSIVE lock so the claim INSERT waits inside Postgres; then the postmaster is SIGKILLed and restarted",
			Outcome:     "the claim never committed: the worker requeues, the redelivery after the restart claims and sends; each sent once",
			Steps: []scenario.Step{
				Enqueue(), start("relay", "cleanup"), Await(outboxRows("PUBLISHED", 6)),
				during(fs(holdTable("inbox")), PodEvent(history.ClaimFailed, "worker-1", 1),
					start("worker"),
					note(Await(scenario.Cond{Blocked: "worker-1"}), "the worker's claim INSERT waits on the lock, inside Postgres"),
					during(fs(crash("postgres")), PodEvent(history.ClaimFailed, "worker-1", 1))),
				Await(ledger(6)),
			},
			Expect: rules(allOnce),
		},
		{
			Name: "postgres-crash-mid-result", Row: "infra", Infra: "single",
			// Every window is forced: the vendor holds the call until the
			// harness has the row lock, and the cleanup starts only after
			// the restart. No timer may end one first: the client's vendor
			// timeout outlasts the run's 4 min bound and the SENDING
			// timeout is reached only by the cleanup's clock, started an
			// hour ahead (the lock raced a 3 s client timeout).
			Config:      map[string]string{"vendor-timeout": "5m", "sending-timeout": "10m", "in-listener-delay": "500ms"},
			Description: "PostgreSQL is SIGKILLed while the worker's result UPDATE runs in it",
			Fault:       "the vendor holds notification-outbox-1 (never recorded) until its inbox row is row-locked, then answers 504 (outcome unknown); the ERROR write waits inside Postgres; then the postmaster is SIGKILLed and restarted",
			Outcome:     "the result never committed: the row stays SENDING, never re-sent; cleanup turns it into ERROR with an alert after the restart; the rest sent once",
			Steps: []scenario.Step{
				Inject(vendorMode(fakevendor.Hold, 1, 1)),
				Enqueue(), start("relay", "worker"),
				note(Await(scenario.Cond{InFlight: 1}),
					"the claim of notification-outbox-1 committed and the vendor holds its send: only the harness ends the call"),
				during(fs(holdInboxRow(1)), PodEvent(history.ResultFailed, "worker-1", 1),
					note(during(fs(vendorMode(fakevendor.Hold, 1, 1)), scenario.Cond{InFlight: 1}),
						"the row is locked before the worker can write it: now the held send is answered (its fault recovered), 504, an unknown outcome the worker writes as ERROR"),
					note(Await(scenario.Cond{Blocked: "worker-1"}), "the worker's result write waits on the row lock, inside Postgres"),
					during(fs(crash("postgres")), PodEvent(history.ResultFailed, "worker-1", 1))),
				note(Await(inboxRows("SENT", 5)),
					"the rest are sent after the restart: no row but notification-outbox-1's is SENDING when the cleanup starts"),
				note(StartWith("cleanup", clockBy(time.Hour)),
					"the cleanup starts only now, its clock an hour ahead: its first sweep finds the row past the SENDING timeout, and no sweep could take it before the crash"),
				Await(inboxRows("ERROR", 1)),
			},
			Expect: rules(lost(1), alerts(history.AlertSendingTimeout, 1), alerts(history.AlertVendorUnknown, 1), handsets(5), vendorCalls(1, 1)),
		},
		{
			Name: "postgres-freeze", Row: "infra", Infra: "single",
			Description: "PostgreSQL is frozen (docker pause) while the relay's claim runs in it",
			Fault:       "the relay's claim waits on a held lock; Postgres is paused until a new relay pod gave up connecting (5 s), then thawed and the lock released",
			Outcome:     "the claim waiting inside the frozen database goes through after the thaw; nothing lost, nothing twice",
			Steps: []scenario.Step{
				Enqueue(), start("worker", "cleanup"),
				note(Await(allOf(PodEvent(history.ConsumeStart, "worker-1", 1), PodEvent(history.Start, "cleanup-1", 1))),
					"worker-1 and cleanup-1 have their database connections before Postgres freezes: a pod still connecting gives up after 5 s and exits (seen under load)"),
				during(fs(holdTable("outbox")), scenario.Cond{Exited: "relay-2"},
					start("relay"),
					note(Await(scenario.Cond{Blocked: "relay-1"}), "the relay's claim waits on the lock, inside Postgres"),
					during(fs(freeze("postgres")), scenario.Cond{Exited: "relay-2"},
						note(start("relay"), "a relay starting now cannot reach the frozen database: it gives up after its 5 s connect timeout"))),
				Await(outboxRows("PUBLISHED", 6)),
			},
			Expect: rules(allOnce),
		},
	}
}

// InfraCatchers maps the canaries the infrastructure scenarios catch to
// the scenarios that must go red with them (scenarios/infra runs them).
var InfraCatchers = map[string][]string{
	canary.TransientQueues: {"broker-crash-queued"},
	canary.FirstBrokerOnly: {"quorum-leader-loss"},
	canary.NoReconnect:     {"broker-crash-mid-publish", "broker-freeze"},
}

// LookupInfra returns the infrastructure scenario named name.
func LookupInfra(name string) (*scenario.Scenario, bool) {
	for _, s := range Infra() {
		if s.Name == name {
			return s, true
		}
	}
	return nil, false
}

// longHeartbeat is a relay's broker heartbeat that outlasts any run (AMQP
// carries at most 65535 s; the infra broker proposes 600 s), so a relay
// never drops a silent connection on its own: the harness cuts it.
const longHeartbeat = "OUTBOXCHAOS_AMQP_HEARTBEAT=600s"

// relayChannelClosed: relay-1 left a publish indefinite because its
// connection died (not fresh: nothing earlier in the run closes it).
var relayChannelClosed = scenario.Cond{Event: &scenario.EventCond{Name: history.Publish, Pod: "relay-1",
	Attrs: map[string]string{history.KeyOutcome: history.OutcomeChannelClosed}}}

func crash(node string) faults.Spec  { return faults.Spec{Kind: faults.KindCrash, Node: node} }
func freeze(node string) faults.Spec { return faults.Spec{Kind: faults.KindFreeze, Node: node} }
func holdTable(t string) faults.Spec { return faults.Spec{Kind: faults.KindHoldTable, Table: t} }
func holdInboxRow(msg int64) faults.Spec {
	return faults.Spec{Kind: faults.KindHoldInboxRow, Msg: msg}
}
func queued(queue string, n int) scenario.Cond {
	return scenario.Cond{Queue: &scenario.QueueCond{Queue: queue, N: n}}
}
