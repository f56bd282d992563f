package catalogue

import (
	"github.com/outboxchaos/outboxchaos/checker"
	"github.com/outboxchaos/outboxchaos/fakevendor"
	"github.com/outboxchaos/outboxchaos/faults"
	"github.com/outboxchaos/outboxchaos/history"
	"github.com/outboxchaos/outboxchaos/scenarios/scenario"
	kp "github.com/outboxchaos/outboxchaos/system/killpoint"
	"github.com/outboxchaos/outboxchaos/system/notification"
)

// auditCases holds the scenarios that force the windows the auditor's
// invariants judge: what a message's status and alerts say against what
// reached a phone, and when.
func auditCases() []*scenario.Scenario {
	ads := []notification.Kind{notification.MissionReminder, notification.GradeLockIn}
	return []*scenario.Scenario{
		{
			Name: "ad-confirmed-before-cutoff", Row: "5", Start: "20:39:50", Kinds: ads,
			Description: "the broker confirmed an evening batch of ads and the relay died before marking it; its lease passes the 20:40 cut-off",
			Fault:       "kill-point relay.after-confirm (SIGKILL) in relay-1 at 20:39:50; a relay at 20:40 reclaims the rows, one the next morning at 08:00",
			Outcome:     "the worker sent each ad once before the cut-off; the relay finds the worker took them and marks them PUBLISHED: neither deferred to the next day, nor EXPIRED with a false loss alert",
			Steps: []scenario.Step{
				Enqueue(), start("worker", "cleanup"), StartWith("relay", Kill(kp.RelayAfterConfirm)), Await(killed("relay-1")),
				Await(ledger(2)),
				StartWith("relay", ClockAt("20:40")),
				note(Await(anyOf(scenario.Cond{Rows: &scenario.Rows{Table: "outbox", Status: "PENDING", Reason: "AD_CUTOFF_DEFERRED", Advertising: true, N: 2}},
					outboxRows("PUBLISHED", 2))), "the reclaimed ads deferred past the cut-off, or marked PUBLISHED"),
				stop("relay-2"),
				StartWith("relay", ClockAt("+1d 08:00")), Await(anyOf(outboxRows("EXPIRED", 2), outboxRows("PUBLISHED", 2))),
			},
			Expect: rules(allOnce, handsets(2), alerts(history.AlertExpired, 0)),
		},
		{
			Name: "ad-send-cutoff", Row: "§5", Start: "20:50:00", Kinds: ads,
			Description: "advertising messages published before the 20:40 cut-off reach the worker after 20:50",
			Fault:       "clock: the job's and the relay's start at 20:39 (the ads are enqueued and published); the worker runs on the run's clock, 20:50",
			Outcome:     "the worker's pre-check parks both outside the advertising hours with PARKED alerts; nothing reaches a phone after 20:50",
			Steps: []scenario.Step{
				scenario.Step{Do: "enqueue", Faults: fs(ClockAt("20:39"))}, StartWith("relay", ClockAt("20:39")),
				Await(outboxRows("PUBLISHED", 2)), start("worker", "cleanup"),
				Await(anyOf(scenario.Cond{Event: &scenario.EventCond{Name: history.Park, N: 2}}, ledger(2))),
			},
			Expect: rules(lost(2), alerts(history.AlertParked, 2)),
		},
		{
			Name: "rejected-then-sent", Row: "12", Kinds: []notification.Kind{notification.GradeRenewal},
			// The 401s must reach the worker as 401s: no call hangs here.
			Config:      map[string]string{"vendor-timeout": "5m", "sending-timeout": "10m"},
			Description: "a definitely-not-sent answer outlasts the in-listener retries: the message goes through the retry queue, then out",
			Fault:       "fake vendor answers 401 three times to message 1 (the first send and both in-listener retries)",
			Outcome:     "the claim is deleted each time, the retry queue brings it back, the fourth send goes out: sent once, and no alert tells of a loss",
			Steps: []scenario.Step{
				during(fs(vendorMode(fakevendor.Status401, 1, 3)), eventWith(history.Republish, history.KeyTo, history.ToRetry), Enqueue(), pipeline()),
				Await(ledger(1)),
			},
			Expect: rules(allOnce, checker.Rule{Rule: "alerts", Kind: history.AlertParked, N: 0}),
		},
		{
			Name: "sent-copy-at-delivery-limit", Row: "11",
			Config:      map[string]string{"delivery-limit": "1"},
			Description: "the result is written, the worker dies before the ack, and the redelivered copy is at the delivery limit",
			Fault:       "delivery-limit 1; pause-point worker.after-result (SIGSTOP) in worker-1, SIGKILLed once any ack it sent is at the broker",
			Outcome:     "the redelivery's peek finds the history row and acks it: a copy of a message already sent is never parked, and no PARKED alert tells of a loss",
			Steps: append(crashWorker(kp.WorkerAfterResult),
				note(Await(anyOf(peekSkipped(1), scenario.Cond{Event: &scenario.EventCond{Name: history.Park, N: 1}})), "the redelivered copy acked at the peek, or parked")),
			Expect: rules(allOnce, peekSkips(1)),
		},
		{
			Name: "db-outage-before-second-copy", Row: "11", Kinds: []notification.Kind{notification.GradeRenewal},
			Config:      map[string]string{"delivery-limit": "2"},
			Description: "the worker's database is down while it holds the first copy of a message; a second copy comes once it is back",
			Fault: "delivery-limit 2; the link postgres-worker down from before the relay publishes until the worker failed its peek 4 times (or parked the copy); " +
				"relay-1 killed at relay.after-confirm (the broker holds the copy), so relay-2, started after the outage, republishes the message when its lease ends",
			Outcome: "the worker holds the copy and asks again while its database fails, and sends it once the database answers; the second copy is acked at the peek; " +
				"no PARKED alert tells of a loss for a message on a phone",
			Steps: []scenario.Step{
				Enqueue(), start("worker", "cleanup"), Await(PodEvent(history.ConsumeStart, "worker-1", 1)),
				note(during(fs(linkDown("postgres-worker")),
					anyOf(scenario.Cond{Event: &scenario.EventCond{Name: history.PeekFailed, N: 4}}, eventOf(history.Park)),
					StartWith("relay", Kill(kp.RelayAfterConfirm))),
					"the first copy's peeks fail while the worker's database is down: held and asked again, or handed back until the limit parks it"),
				Await(killed("relay-1")),
				start("relay"),
				note(Await(allOf(outboxRows("PUBLISHED", 1), anyOf(peekSkipped(1), scenario.Cond{Event: &scenario.EventCond{Name: history.Park, N: 1}}, ledger(1)))),
					"relay-2 republished the message: the second copy is acked at the peek, or sent"),
			},
			Expect: rules(allOnce, handsets(1), alerts(history.AlertParked, 0)),
		},
		{
			Name: "park-refused-then-sent", Row: "12", Kinds: []notification.Kind{notification.GradeRenewal},
			Config:      map[string]string{"in-listener-retries": "2", "retry-max": "0"},
			Description: "the worker parks a message the vendor refused three times, the broker refuses the park, and the copy handed back is sent",
			Fault: "401 three times for message 1 (in-listener retries 2, no retry queue); pause-point worker.after-send, 3rd hit, in worker-1; " +
				"the link rabbitmq-worker down from then until the park's republish failed",
			Outcome: "no PARKED alert before the parking queue holds the copy: the park fails, the delivery goes back, the vendor accepts it; sent once, no alert of a loss",
			Steps: []scenario.Step{
				Enqueue(), Inject(vendorMode(fakevendor.Status401, 1, 3)),
				StartWith("worker", faults.Spec{Kind: faults.KindPausePoint, Point: kp.WorkerAfterSend, Hit: 3}), start("relay", "cleanup"),
				Await(scenario.Cond{Paused: "worker-1"}),
				note(during(fs(linkDown("rabbitmq-worker")), eventOf(history.ParkFailed), Inject(faults.Spec{Kind: faults.KindResume, Pod: "worker-1"})),
					"the third refusal parks the message while the worker's broker link is down: the park's republish fails"),
				Await(ledger(1)),
			},
			Expect: rules(allOnce, handsets(1), alerts(history.AlertParked, 0)),
		},
		{
			Name: "parked-then-second-copy", Row: "14", Kinds: []notification.Kind{notification.GradeRenewal},
			Config:      map[string]string{"in-listener-retries": "2", "retry-max": "0"},
			Description: "the worker parks a message the vendor refused three times; a second copy of it arrives after the park",
			Fault: "401 three times for message 1 (in-listener retries 2, no retry queue); relay-1 killed at relay.after-confirm " +
				"(the broker holds the copy), so relay-2, started once the first copy is parked, republishes the message when relay-1's lease ends",
			Outcome: "the park is on record (inbox FAILED): the second copy is acked at the peek, not sent; the PARKED alert stays true",
			Steps: []scenario.Step{
				Enqueue(), Inject(vendorMode(fakevendor.Status401, 1, 3)),
				start("worker", "cleanup"), StartWith("relay", Kill(kp.RelayAfterConfirm)),
				Await(killed("relay-1")),
				note(Await(eventOf(history.Park)), "the third refusal parks the first copy"),
				start("relay"),
				note(Await(allOf(outboxRows("PUBLISHED", 1), anyOf(peekSkipped(1), ledger(1)))),
					"relay-2 republished the message: the second copy finds the park on record, or is sent"),
			},
			Expect: rules(lost(1), handsets(0), alerts(history.AlertParked, 1)),
		},
		{
			Name: "business-events-once", Row: "1", PerKind: 2, AllowUnfired: true,
			Description: "every kind's job runs on business rows whose ids are not their members' (a grade history, an award winning)",
			Fault:       "none: the auditor's ground truth against what the jobs enqueued",
			Outcome:     "one outbox row per business event, under the design's key, to its member's number; each sent once",
			Steps:       []scenario.Step{Enqueue(), pipeline(), Await(ledger(12))},
			Expect:      rules(allOnce, handsets(12)),
		},
	}
}
