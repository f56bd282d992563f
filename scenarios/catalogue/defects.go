package catalogue

import (
	"time"

	"github.com/outboxchaos/outboxchaos/checker"
	"github.com/outboxchaos/outboxchaos/fakevendor"
	"github.com/outboxchaos/outboxchaos/faults"
	"github.com/outboxchaos/outboxchaos/history"
	"github.com/outboxchaos/outboxchaos/rig"
	"github.com/outboxchaos/outboxchaos/scenarios/scenario"
	kp "github.com/outboxchaos/outboxchaos/system/killpoint"
	"github.com/outboxchaos/outboxchaos/system/notification"
)

// defectCases holds the scenarios of the wider fault vocabulary:
// configuration at its boundaries, outages longer than the limits, the
// business side changing its mind, dates and times of day, a full queue,
// two copies past the peek at once. Three found real defects in system/
// (each failed before its fix; the saved failing run is a checker fixture
// under checker/testdata/runs/).
func defectCases() []*scenario.Scenario {
	one := []notification.Kind{notification.GradeRenewal}
	return []*scenario.Scenario{
		{
			Name: "crash-before-expiry-alert", Row: "2*", Kinds: one,
			Description: "the relay dies the moment its EXPIRED for a row past its date is durable, before any step after the commit",
			Fault:       "clock: the relays run the next day; crash point sql:commit:after, first hit (SIGKILL) in relay-1",
			Outcome:     "the EXPIRED row is final, so its alert went out before the commit: the row is EXPIRED with its alert, nothing sent",
			Steps: []scenario.Step{
				Enqueue(), start("worker", "cleanup"),
				StartWith("relay", ClockAt("+1d 10:00"), faults.Spec{Kind: faults.KindCrashPoint, Point: "sql:commit:after", Hit: 1}), Await(killed("relay-1")),
				StartWith("relay", ClockAt("+1d 10:00")), Await(outboxRows("EXPIRED", 1)),
			},
			Expect: rules(lost(1), alerts(history.AlertExpired, 1), handsets(0)),
		},
		{
			Name: "relay-crash-after-attempt-alert", Row: "§3", Kinds: one,
			Config:      map[string]string{"alert-attempt": "1"},
			Description: "the relay dies right after writing the failed publish that owes the attempts alert (alert-attempt at its minimum, 1)",
			Fault:       "the operator unbinds the main queue (the publish comes back returned); kill-point relay.after-fail (SIGKILL) in relay-1",
			Outcome:     "the attempt that raises RELAY_ATTEMPTS is committed only with its alert out: the alert survives the crash; the row is republished and sent once",
			Steps: []scenario.Step{
				start("worker", "cleanup"), StartWith("relay", Kill(kp.RelayAfterFail)),
				note(Await(allOf(PodEvent(history.Start, "relay-", 1), PodEvent(history.ConsumeStart, "worker-", 1))),
					"both declared the topology: the unbind is not undone by a pod starting"),
				during(fs(faults.Spec{Kind: faults.KindUnbind}), killed("relay-1"), Enqueue()),
				start("relay"), Await(ledger(1)),
			},
			// No alerts rule: the alert contract alone must catch a
			// missing RELAY_ATTEMPTS alert (canary no-attempts-alert).
			Expect: rules(allOnce, checker.Rule{Rule: "returned-counted"}),
		},
		{
			Name: "delivery-limit-outage", Row: "§5", Kinds: one,
			Config:      map[string]string{"delivery-limit": "1"},
			Description: "the worker's database is down for longer than the delivery limit's hand-backs would last (delivery-limit at its minimum, 1)",
			Fault:       "the worker's Postgres link is down until the worker has failed its peek 3 times",
			Outcome:     "the worker holds the delivery and asks again while its database fails: the outage is the worker's, not the message's, so it spends none of the delivery limit; sent once when the database answers, no PARKED alert",
			Steps: []scenario.Step{
				Enqueue(), start("worker", "cleanup"), Await(PodEvent(history.ConsumeStart, "worker-", 1)),
				during(fs(linkDown("postgres-worker")), anyOf(scenario.Cond{Event: &scenario.EventCond{Name: history.PeekFailed, N: 3}}, eventOf(history.Park)), start("relay")),
			},
			Expect: rules(allOnce, handsets(1), alerts(history.AlertParked, 0)),
		},
		{
			Name: "worker-crash-on-last-delivery", Row: "7", Kinds: one,
			Config:      map[string]string{"delivery-limit": "1"},
			Description: "the worker dies as a delivery arrives, and the copy RabbitMQ hands the next worker is at the delivery limit",
			Fault:       "kill-point worker.on-delivery, 1st hit (SIGKILL) in worker-1; a new worker-2 takes over",
			Outcome:     "RabbitMQ never dead-letters on its own first: the next worker parks the message with its reason and a PARKED alert (lost visibly)",
			Steps: []scenario.Step{
				Enqueue(), StartWith("worker", faults.Spec{Kind: faults.KindKillPoint, Point: kp.WorkerOnDelivery, Hit: 1}), start("cleanup"),
				Await(PodEvent(history.ConsumeStart, "worker-", 1)),
				start("relay"), Await(killed("worker-1")),
				start("worker"),
			},
			Expect: rules(lost(1), checker.Rule{Rule: "parked", N: 1}),
		},
		{
			Name: "consent-withdrawn", Row: "§3/§5", Kinds: one, PerKind: 4,
			Description: "two members withdraw SMS consent mid-run: one before the relay runs, one after it published, before the worker",
			Fault:       "member 2 withdraws consent before the relay starts; member 3 after the relay published, before a worker consumes",
			Outcome:     "the relay skips member 2, the worker's pre-check skips member 3, members 1 and 4 are sent once; every skip owed by the members table",
			Steps: []scenario.Step{
				Enqueue(), Inject(withdraw(2)), start("relay"),
				note(Await(allOf(outboxRows("PENDING", 0), outboxRows("PUBLISHING", 0))), "the relay is done with every row, whatever it decided"),
				Inject(withdraw(3)), start("worker", "cleanup"),
			},
			// The contract alone: a skip the members table does not owe
			// is a silent loss (canary consent-first-only).
		},
		{
			Name: "utc-date-rollover", Row: "2", Start: "2027-03-01 08:59:50",
			Description: "the job enqueues at 08:59 Seoul, while the UTC date is still the day before; the relay runs after 09:00, when it has turned",
			Fault:       "clock: the job runs at 2027-03-01 08:59:50 KST (2027-02-28 UTC); the relay's clock starts at 09:00",
			Outcome:     "scheduled dates are Seoul dates on both sides: nothing expires, each sent once",
			Steps: []scenario.Step{
				Enqueue(), start("worker", "cleanup"), StartWith("relay", ClockAt("09:00")), Await(outboxRows("PUBLISHED", 6)),
			},
			Expect: rules(allOnce),
		},
		{
			Name: "night-enqueue", Row: "2", Start: "2027-03-01 02:00:00",
			Description: "the job enqueues at 02:00 Seoul (17:00 UTC the day before), outside the relay's window; the relay's first run is at 08:00",
			Fault:       "clock: the job runs at 2027-03-01 02:00 KST; the relay's and the worker's clocks start at 08:00 the same Seoul day",
			Outcome:     "rows wait PENDING through the night, keep their Seoul scheduled date, and go out at 08:00: nothing expires, each sent once",
			Steps: []scenario.Step{
				Enqueue(), start("cleanup"), StartWith("worker", ClockAt("08:00")), StartWith("relay", ClockAt("08:00")),
				Await(outboxRows("PUBLISHED", 6)),
			},
			Expect: rules(allOnce),
		},
		{
			Name: "expired-across-month-end", Row: "2*", Start: "2027-02-28 20:54:00",
			Description: "rows enqueued on a month's last day reach a relay only the next morning, the 1st",
			Fault:       "clock: the job runs on 2027-02-28; the relay's clock starts at 08:00 the next day (2027-03-01)",
			Outcome:     "a date in the next month is past the scheduled date: every row EXPIRED with its alert, nothing sent",
			Steps: []scenario.Step{
				Enqueue(), start("worker", "cleanup"), StartWith("relay", ClockAt("+1d 08:00")), Await(outboxRows("EXPIRED", 6)),
			},
			Expect: rules(lost(6), alerts(history.AlertExpired, 6), handsets(0)),
		},
		adCutoffDeferral("ad-deferral-at-year-end", "2026-12-31 20:39:50", "advertising messages reach the relay after 20:40 on the year's last day",
			"clock: the relay starts at 20:40:00 on 2026-12-31, then a relay runs on 2027-01-01 at 08:00",
			"ads deferred to 08:00 on the 1st of January; past their scheduled date they are EXPIRED + alert; the rest sent once"),
		{
			Name: "unroutable-mid-batch", Row: "§4", Kinds: one, PerKind: 5,
			Description: "one message in the middle of a batch is unroutable while the others are confirmed",
			Fault:       "failpoint relay.misroute-publish, 3rd hit, in relay-1: the third publish of the batch goes to a routing key nothing is bound to",
			Outcome:     "the return is the third message's alone: the four others are marked PUBLISHED by the same run, the third backs off and is republished; each sent once",
			Steps: []scenario.Step{
				Enqueue(), start("worker", "cleanup"),
				StartWith("relay", faults.Spec{Kind: faults.KindFailpoint, Point: kp.FailMisroute, Hit: 3}),
				Await(ledger(5)),
			},
			// The contract's republish bound holds the four confirmed rows
			// to one publish each (canary all-or-nothing).
			Expect: rules(allOnce, checker.Rule{Rule: "returned-counted"}),
		},
		{
			Name: "queue-full-nack", Row: "§4", Kinds: one, PerKind: 3,
			Config: map[string]string{"queue-max-length": "2", "batch-size": "3"},
			// The fault is the queue's own limit, not an injection: the
			// awaited nack proves it happened.
			AllowUnfired: true,
			Description:  "the main queue is over its length limit when the relay publishes: RabbitMQ nacks (x-max-length 2, reject-publish)",
			Fault:        "queue-max-length 2; no worker consumes while a first batch of three fills the queue past it and a second batch of three is published",
			Outcome:      "a nack is a failure: the nacked rows back off and are republished once the workers made room; each sent once",
			Steps: []scenario.Step{
				Enqueue(), start("relay"),
				note(Await(outboxRows("PUBLISHED", 3)), "the first batch is in: the queue holds three, over its limit"),
				enqueueN(6), Await(eventWith(history.Publish, history.KeyOutcome, history.OutcomeNacked)),
				start("worker", "cleanup"), Await(ledger(6)),
			},
			Expect: rules(allOnce),
		},
		unroutableBehindNack(one),
		{
			Name: "retry-into-full-queue", Row: "12", Kinds: one, PerKind: 2,
			// A 3 s retry TTL: the queue is seen over its limit while the
			// retry still waits, before it expires.
			Config:       map[string]string{"queue-max-length": "1", "in-listener-retries": "0", "retry-ttl": "3s"},
			AllowUnfired: true,
			Description:  "a retry expires while the main queue is over its length limit: RabbitMQ's dead-letter worker is refused and holds it, in no queue a client counts, until it retries",
			Fault: "queue-max-length 1; the vendor answers 429 once for notification-outbox-1, which goes to the retry queue; worker-1 freezes before its next claim (pause-point worker.before-claim, 2nd hit) " +
				"while three more rows fill the queue past its limit and a fourth is nacked; the retry expires into the full queue; worker-1 resumes",
			Outcome: "the refused dead letter comes back once the queue has room (the broker's retry, 1 s here, 180 s by default); each sent once, nothing counted lost",
			Steps: []scenario.Step{
				Inject(vendorMode(fakevendor.Status429, 1, 1)),
				Enqueue(), StartWith("worker", faults.Spec{Kind: faults.KindPausePoint, Point: kp.WorkerBeforeClaim, Hit: 2}), start("relay", "cleanup"),
				note(Await(allOf(scenario.Cond{Paused: "worker-1"}, scenario.Cond{Queue: &scenario.QueueCond{Queue: "retry", N: 1}})),
					"notification-outbox-1 waits in the retry queue; worker-1 holds the second message, frozen"),
				enqueueN(5),
				note(Await(scenario.Cond{Queue: &scenario.QueueCond{Queue: "main", N: 3}}), "three more are in, past the limit (a quorum queue refuses only the publishes after it saw itself over it)"),
				enqueueN(6),
				note(Await(scenario.Cond{Event: &scenario.EventCond{Name: history.Publish, Attrs: map[string]string{history.KeyOutcome: history.OutcomeNacked}, Fresh: true}}),
					"the main queue is over its limit and refuses publishes until worker-1 drains it"),
				note(Await(scenario.Cond{Queue: &scenario.QueueCond{Queue: "retry", N: 1}}), "the retry has not expired yet"),
				note(Await(scenario.Cond{Queue: &scenario.QueueCond{Queue: "retry", N: 0}}),
					"it expired into the full queue: the dead-letter worker's publish is refused (inside RabbitMQ, within a millisecond of the expiry)"),
				Inject(faults.Spec{Kind: faults.KindResume, Pod: "worker-1"}),
				Await(ledger(6)),
			},
			Expect: rules(allOnce),
		},
		{
			Name: "claim-race-past-peek", Row: "7/§5", Kinds: one,
			Description: "two copies of one message are past the peek at once: single-active-consumer hands the delivery over while the first worker still holds it",
			Fault:       "pause-point worker.before-claim freezes worker-1 after its peek; both workers' RabbitMQ link is cut, so the broker hands the delivery to worker-2; worker-1 resumes once worker-2 has sent it",
			Outcome:     "the inbox claim, not the peek, decides: worker-1's claim INSERT finds worker-2's row and it does not send; sent once",
			Steps: []scenario.Step{
				Enqueue(), StartWith("worker", faults.Spec{Kind: faults.KindPausePoint, Point: kp.WorkerBeforeClaim}),
				Await(PodEvent(history.ConsumeStart, "worker-1", 1)), start("worker"), Await(PodEvent(history.ConsumeStart, "worker-2", 1)),
				start("relay", "cleanup"),
				note(Await(scenario.Cond{Paused: "worker-1"}), "worker-1 holds the delivery past its peek, frozen"),
				note(during(fs(linkDown("rabbitmq-worker")), PodEvent(history.Reconnect, "worker-2", 1)),
					"the broker sees worker-1's connection close and requeues its delivery"),
				note(Await(ledger(1)), "worker-2 took over, passed the peek and sent"),
				Inject(faults.Spec{Kind: faults.KindResume, Pod: "worker-1"}),
				note(Await(anyOf(PodEvent(history.ClaimLost, "worker-1", 1), PodEvent(history.VendorCall, "worker-1", 1))), "worker-1 made its move"),
			},
			Expect: rules(allOnce, copies(1)),
		},
		{
			Name: "backoff-schedule", Row: "§3", Kinds: one,
			Description: "a publish keeps failing: each failure must wait its own backoff step (1·2·4 minutes here 100·200·400 ms), not the same one",
			Fault:       "the operator unbinds the main queue until the row's third publish came back returned",
			Outcome:     "attempts 1, 2, 3 wait 1, 2 and 4 steps; republished once the binding is back; sent once",
			Steps: []scenario.Step{
				start("worker", "cleanup", "relay"),
				Await(allOf(PodEvent(history.Start, "relay-", 1), PodEvent(history.ConsumeStart, "worker-", 1))),
				during(fs(faults.Spec{Kind: faults.KindUnbind}), eventWith(history.PublishFailed, history.KeyAttempt, "3"), Enqueue()),
				Await(ledger(1)),
			},
			// The contract alone: the backoff rule reads the failures'
			// waits (canary flat-backoff).
			Expect: rules(allOnce),
		},
	}
}

// withdraw is member id withdrawing SMS consent.
func withdraw(member int64) faults.Spec {
	return faults.Spec{Kind: faults.KindWithdrawConsent, Member: member}
}

// unroutableBehindNack: two batches of a draining relay in flight on one
// channel, the first nacked, the second with an unroutable message. The
// first batch's nack replaces the channel (a nack always does) while the
// second is on it: the second's return, read off the channel by either
// batch's Await or still on it, must stay the second's, and RabbitMQ acks
// the returned message after returning it, so without its return it is
// confirmed and marked PUBLISHED with nothing in any queue.
//
// The order is forced, never raced: a 10-minute latency is a hold (the
// link passes what it carries only when recovered, then all of it in
// order). The first batch's nacks are held until relay-1 froze at the
// start of the second batch's write, holding the publisher, so the
// first's Await cannot replace the channel before the second is on it;
// the second batch's publish is then held on its way to the broker until
// the first's nacks are logged, which comes after its Await replaced the
// channel. Long heartbeats keep the link silent but for the batches, so
// "fired" is their traffic; the long lease and confirm timeout outlast
// the holds.
func unroutableBehindNack(kinds []notification.Kind) *scenario.Scenario {
	nacked := scenario.Cond{Event: &scenario.EventCond{Name: history.Publish, Pod: "relay-1", Attrs: map[string]string{history.KeyOutcome: history.OutcomeNacked}, Fresh: true}}
	return &scenario.Scenario{
		Name: "unroutable-behind-nack", Row: "§4", Kinds: kinds, PerKind: 2,
		Config: map[string]string{"queue-max-length": "1", "batch-size": "3", "relay-drain": "true", "relay-drain-claimers": "1",
			"confirm-timeout": "1m", "lease": "1m", "amqp-heartbeat": "1m"},
		Description: "a draining relay has two batches in flight on one channel: the full main queue nacks the first, the second carries a message nothing is bound to",
		Fault: "queue-max-length 1, filled past it by a first run of two rows; a drain of batch A (three rows) and batch B (one row): a 10-minute latency on RabbitMQ → relay holds A's nacks " +
			"until relay-1 froze as it began to write B (pause-point relay.before-publish, 3rd hit); B's publish goes to a routing key nothing is bound to (failpoint relay.misroute-publish, 6th hit) " +
			"and a 10-minute latency on relay → RabbitMQ holds it until A's nacks replaced the channel",
		Outcome: "B's return stays B's although A's nack replaced the channel it came on: returned, backed off and republished; A's rows are republished once the workers made room; each sent once",
		Steps: []scenario.Step{
			Enqueue(),
			StartWith("relay", faults.Spec{Kind: faults.KindPausePoint, Point: kp.RelayBeforePublish, Hit: 3}, faults.Spec{Kind: faults.KindFailpoint, Point: kp.FailMisroute, Hit: 6}),
			note(Await(outboxRows("PUBLISHED", 2)), "the first run is in: the main queue holds two, over its limit"),
			note(during(fs(latency("rabbitmq-relay", rig.Downstream, 10*time.Minute)), allOf(scenario.Cond{Paused: "relay-1"}, scenario.Cond{Fired: true}), enqueueN(6)),
				"A reached the broker and its nacks wait in the link; relay-1 froze holding the publisher, B's channel chosen: A's Await cannot replace it before B is on it"),
			note(during(fs(latency("rabbitmq-relay", rig.Upstream, 10*time.Minute)), allOf(nacked, scenario.Cond{Fired: true}), Inject(faults.Spec{Kind: faults.KindResume, Pod: "relay-1"})),
				"B's publish waits in the link while A's nacks replace the channel; once A's outcomes are logged, B's return and ack reach the replaced channel"),
			start("worker", "cleanup"),
			note(Await(outboxRows("PUBLISHED", 6)), "every row is marked, B's rightly or not"),
		},
		Expect: rules(allOnce, checker.Rule{Rule: "returned-counted"}),
	}
}
