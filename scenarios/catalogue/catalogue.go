package catalogue

import (
	"fmt"
	"time"

	"github.com/outboxchaos/outboxchaos/checker"
	"github.com/outboxchaos/outboxchaos/fakevendor"
	"github.com/outboxchaos/outboxchaos/faults"
	"github.com/outboxchaos/outboxchaos/history"
	"github.com/outboxchaos/outboxchaos/rig"
	"github.com/outboxchaos/outboxchaos/scenarios/scenario"
	kp "github.com/outboxchaos/outboxchaos/system/killpoint"
	"github.com/outboxchaos/outboxchaos/system/notification"
	"github.com/outboxchaos/outboxchaos/system/sms"
)

// Named returns every named scenario, in the failure table's order,
// then the reconciler's (reconcile.go).
func Named() []*scenario.Scenario {
	return append(append(append(tableCases(), reconcileCases()...), defectCases()...), auditCases()...)
}

// tableCases is the failure table's part of the catalogue.
func tableCases() []*scenario.Scenario {
	return []*scenario.Scenario{
		{
			Name: "job-crash-before-commit", Row: "1", PerKind: 2,
			Description: "the batch job dies before its outbox transaction commits; the re-run recomputes the same dedup keys",
			Fault:       "kill-point job.before-commit (SIGKILL) in the job pod",
			Outcome:     "no row after the crash; re-run inserts each once; a third run inserts 0; every notification sent once",
			Steps: []scenario.Step{
				StartWith("job", Kill(kp.JobBeforeCommit)), Await(killed("job-1")),
				assert(outboxRows("", 0)),
				Enqueue(), assert(outboxRows("", 12)),
				Enqueue(), assert(outboxRows("", 12)),
				pipeline(),
			},
			Expect: rules(allOnce),
		},
		{
			Name: "pending-before-relay", Row: "2",
			Description: "the job committed but no relay has run yet; the rows wait as PENDING and go out on the next run",
			Fault:       "no relay running after the commit; the relay's clock starts one minute later",
			Outcome:     "rows stay PENDING while no relay runs, then each is sent once",
			Steps: []scenario.Step{
				Enqueue(), start("worker", "cleanup"), assert(outboxRows("PENDING", 6)),
				note(StartWith("relay", clockBy(time.Minute)), "every row is older than any recent window a poller looks at"),
				note(Await(PodEvent(history.FirstRun, "relay-1", 1)), "the relay's first poll is over"),
				note(assert(scenario.Cond{Event: &scenario.EventCond{Name: history.FirstRun, Pod: "relay-1", Attrs: map[string]string{history.KeyClaimed: "6"}}}),
					"its first poll claimed every due row, however old"),
				Await(outboxRows("PUBLISHED", 6)),
			},
			Expect: rules(allOnce),
		},
		{
			Name: "backlog-oldest-first", Row: "§3", Kinds: GradeRenewalOnly, PerKind: 6,
			Description: "a backlog three batches deep: the relay takes the oldest due rows first, so no row waits while younger ones go out",
			Fault:       "50 ms latency on the relay's broker link, batch size 2, a committed backlog of 6 rows, one relay",
			Outcome:     "three claims in the order the rows were enqueued (claim-order holds); each sent once",
			Config:      map[string]string{"batch-size": "2", "confirm-timeout": "10s"},
			Steps: []scenario.Step{
				note(Enqueue(), "the job's commit is logged before any relay starts, so every claim sees the whole backlog"),
				Inject(latency("rabbitmq-relay", rig.Downstream, 50*time.Millisecond)),
				pipeline(), Await(outboxRows("PUBLISHED", 6)),
			},
			Expect: rules(allOnce),
		},
		{
			Name: "expired-before-relay", Row: "2*",
			Description: "the relay first runs after the rows' scheduled date has passed",
			Fault:       "clock jump: the relay's virtual clock is the next day",
			Outcome:     "every row EXPIRED with an alert naming it; nothing sent",
			Steps: []scenario.Step{
				Enqueue(), start("worker", "cleanup"), StartWith("relay", ClockAt("+1d 10:00")),
				Await(outboxRows("EXPIRED", 6)),
			},
			Expect: rules(lost(6), alerts(history.AlertExpired, 6), handsets(0)),
		},
		{
			Name: "relay-crash-after-claim", Row: "3",
			Description: "the relay dies after its claim committed, before publishing",
			Fault:       "kill-point relay.after-claim (SIGKILL) in relay-1",
			Outcome:     "rows stay PUBLISHING until the lease passes, then CLAIM_EXPIRED → PENDING → republished; each sent once",
			Steps: []scenario.Step{
				Enqueue(), StartWith("relay", Kill(kp.RelayAfterClaim)), Await(killed("relay-1")),
				assert(scenario.Cond{Rows: &scenario.Rows{Table: "outbox", Status: "PUBLISHING", ClaimedBy: "relay-1", N: 6}}),
				pipeline(), Await(eventOf(history.Reclaim)),
			},
			Expect: rules(allOnce),
		},
		{
			Name: "confirm-timeout", Row: "4",
			Description: "no confirm within the 5 s (here 600 ms) timeout: once because the confirms are late, once because the publishes never arrived",
			Fault:       "Toxiproxy latency 1.5 s on RabbitMQ → relay (publishes delivered, confirms late); then a stall on relay → RabbitMQ (publishes lost)",
			Outcome:     "indefinite outcome treated as failure: backoff republish; the queue may hold copies, the inbox lets one through; nothing lost",
			Steps: []scenario.Step{
				Enqueue(), pipeline(), Await(ledger(6)),
				note(during(fs(latency("rabbitmq-relay", rig.Downstream, 1500*time.Millisecond)),
					allOf(scenario.Cond{Event: &scenario.EventCond{Name: history.Publish, Attrs: map[string]string{history.KeyOutcome: history.OutcomeTimedOut}, Fresh: true}},
						scenario.Cond{Fired: true}),
					enqueueN(2)), "a publish timed out since the latency went in, and a confirm met it: a loaded broker can be late without it"),
				note(Await(outboxRows("PUBLISHED", 12)), "the republish too, so the relay holds a live connection"),
				note(Await(copiesSeen(1)), "the copy reached a worker: the run never settles with it in flight"),
				during(fs(stall("rabbitmq-relay", rig.Upstream)),
					allOf(scenario.Cond{Event: &scenario.EventCond{Name: history.Publish, Attrs: map[string]string{history.KeyOutcome: history.OutcomeTimedOut}, Fresh: true}},
						scenario.Cond{Fired: true}),
					enqueueN(3)),
			},
			Expect: rules(allOnce, copies(1)),
		},
		{
			Name: "relay-crash-after-confirm", Row: "5",
			Description: "the broker confirmed, the relay dies before marking PUBLISHED",
			Fault:       "kill-point relay.after-confirm (SIGKILL) in relay-1",
			Outcome:     "republished with the same message_id after the lease; the inbox blocks the copy; each sent once",
			Steps: []scenario.Step{
				Enqueue(), start("worker", "cleanup"), StartWith("relay", Kill(kp.RelayAfterConfirm)), Await(killed("relay-1")),
				Await(ledger(6)), start("relay"), Await(outboxRows("PUBLISHED", 6)), Await(copiesSeen(6)),
			},
			Expect: rules(allOnce, copies(6)),
		},
		{
			Name: "overlapping-relays", Row: "6", PerKind: 10,
			// Small batches polled every 10 ms; a lease and a confirm timeout
			// no run can outlast, so any row claimed twice was claimed by
			// overlapping runs.
			Config:      map[string]string{"batch-size": "5", "relay-interval": "10ms", "confirm-timeout": "10s", "lease": "30s"},
			Description: "three relay runs overlap on the same outbox",
			Fault:       "a claim held open on the first batch's rows (row locks in an open transaction) while three relay pods poll every 10 ms, batch size 5, 60 rows",
			Outcome:     "SKIP LOCKED hands them disjoint rows: they skip the held batch and take the rest; each sent once",
			Steps: []scenario.Step{
				Enqueue(),
				note(during(fs(faults.Spec{Kind: faults.KindHoldRows, Rows: 5}),
					anyOf(scenario.Cond{Waiters: 2}, scenario.Cond{Rows: &scenario.Rows{Table: "outbox", NotStatus: "PENDING", N: 55}}),
					start("relay", "relay", "relay", "worker", "cleanup")),
					"two relays waiting on the held rows (a claim that does not skip locked rows) or every other row claimed around them: the overlap happened either way"),
				Await(outboxRows("PUBLISHED", 60)),
			},
			Expect: rules(allOnce, checker.Rule{Rule: "disjoint-claims"}),
		},
		{
			Name: "stale-relay", Row: "3/5",
			Kinds: []notification.Kind{notification.GradeRenewal, notification.MonthlyAwardsWinning},
			// While its confirms are held relay-1 hears nothing from the
			// broker: with the 5 s heartbeat it dropped the connection
			// (channel-closed) before a loaded harness had relay-2 reclaim.
			// The heartbeat (the broker caps it at 60 s) outlasts the run.
			Config:      map[string]string{"amqp-heartbeat": "600s"},
			Description: "a relay run loses its lease while waiting for confirms; another run takes the rows over",
			Fault:       "relay-1's confirms held back (its confirm timeout, 5 min, outlasts the run) until relay-2 has reclaimed the rows and died after their confirm",
			Outcome:     "the run that lost its lease writes 0 rows; the rows are republished with the same message_id; each sent once",
			Steps: []scenario.Step{
				start("worker", "cleanup"),
				note(startEnv("relay", "OUTBOXCHAOS_CONFIRM_TIMEOUT=5m"),
					"relay-1's confirm timeout outlasts the run (90 s): the harness never races it while the confirms are held"),
				note(scenario.Step{Do: "enqueue", Kinds: []notification.Kind{notification.GradeRenewal}}, "one row first, so relay-1 holds a broker connection"),
				Await(ledger(1)),
				note(during(fs(latency("rabbitmq-relay", rig.Downstream, time.Hour)), killed("relay-2"),
					note(scenario.Step{Do: "enqueue", Kinds: []notification.Kind{notification.MonthlyAwardsWinning}, PerKind: 5}, "five rows in one transaction: relay-1 claims them in one run"),
					Await(scenario.Cond{Rows: &scenario.Rows{Table: "outbox", Status: "PUBLISHING", ClaimedBy: "relay-1", N: 5}}),
					note(scenario.Step{Do: "start", Roles: []string{"relay"}, Link: "rabbitmq-worker", Faults: fs(Kill(kp.RelayAfterConfirm))},
						"relay-2 reaches RabbitMQ through the worker's link, without latency")),
					"removing a latency toxic lets what it held through at once"),
				Await(PodEvent(history.Mark, "relay-1", 2)),
				start("relay"),
			},
			Expect: rules(allOnce, checker.Rule{Rule: "late-mark", Pod: "relay-1", N: 0},
				checker.Rule{Rule: "events", Event: history.LostLease, Pod: "relay-1", N: 5}),
		},
		{
			Name: "worker-crash-before-claim", Row: "7",
			Description: "the worker dies after the pre-checks, before its claim INSERT",
			Fault:       "pause-point worker.before-claim (SIGSTOP) in worker-1, SIGKILLed once any ack it sent is at the broker",
			Outcome:     "not acked → redelivered → the next consumer sends it once",
			Steps:       crashWorker(kp.WorkerBeforeClaim),
			Expect:      rules(allOnce),
		},
		{
			Name: "worker-crash-after-claim", Row: "8",
			Description: "the worker is killed after its claim committed, before the vendor call",
			Fault:       "pause-point worker.after-claim (SIGSTOP) in worker-1, SIGKILLed once any ack it sent is at the broker",
			Outcome:     "SENDING stays; the redelivery does not send; cleanup turns it into ERROR + alert (lost, visibly)",
			Steps:       crashWorker(kp.WorkerAfterClaim),
			Expect:      rules(lost(1), alerts(history.AlertSendingTimeout, 1), handsets(5)),
		},
		{
			Name: "stranded-in-one-sweep", Row: "8", PerKind: 3,
			Kinds:       []notification.Kind{notification.GradeRenewal},
			Description: "three workers in turn are killed right after their claim committed, each on a different message; the cleanup's first sweep finds all three stuck in SENDING at once",
			Fault:       "pause-point worker.after-claim (SIGSTOP) in worker-1, -2 and -3, each SIGKILLed once frozen, before the next starts; the cleanup starts only then, its clock one minute ahead",
			Outcome:     "one sweep turns all three into ERROR, each with its own SENDING_TIMEOUT alert (lost visibly); none sent, none alerted twice",
			Steps: append(append([]scenario.Step{Enqueue(), start("relay"), Await(outboxRows("PUBLISHED", 3))}, strandClaims(3)...),
				assert(inboxRows("SENDING", 3)),
				note(StartWith("cleanup", clockBy(time.Minute)),
					"the cleanup's first sweep is its first look at the inbox, and a minute past every claim: each stranded row is past the SENDING timeout in it"),
				note(Await(scenario.Cond{Event: &scenario.EventCond{Name: history.CleanupSweep, Pod: "cleanup-1", Attrs: map[string]string{history.KeyCount: "3"}}}),
					"one committed sweep turned all three rows into ERROR"),
				note(start("worker"), "the last killed worker's message is redelivered to a live one, which finds its row at the peek"),
				Await(peekSkipped(3)),
			),
			Expect: rules(lost(3), alerts(history.AlertSendingTimeout, 3), handsets(0), peekSkips(3),
				checker.Rule{Rule: "inbox-all", Status: "ERROR"}),
		},
		vendorUnknown("vendor-timeout", fakevendor.AcceptHang, fakevendor.Hang,
			"the vendor call times out: once after the message reached the phone, once before"),
		vendorUnknown("vendor-5xx", fakevendor.Accept5xx, fakevendor.Fail5xx,
			"the vendor answers 5xx: once after the message reached the phone, once before"),
		{
			Name: "vendor-odd-answers", Row: "9",
			Description: "the vendor answers HTTP 200 but not a success: a failure code in the body, a body that arrives after the client's timeout, a body that is not JSON",
			Fault:       "fake vendor fail-code for notification-outbox-1, late-body for -2, malformed for -3",
			Outcome:     "each an unknown outcome: ERROR + alert, never retried; -2 and -3 reached the phone once, -1 is lost visibly",
			Steps: []scenario.Step{
				Inject(vendorMode(fakevendor.FailCode, 1, 0), vendorMode(fakevendor.LateBody, 2, 0), vendorMode(fakevendor.Malformed, 3, 0)),
				Enqueue(), pipeline(), Await(inboxRows("ERROR", 3)),
			},
			Expect: rules(lost(1), alerts(history.AlertVendorUnknown, 3), errorDelivered(2), vendorCalls(1, 1), vendorCalls(2, 1), vendorCalls(3, 1)),
		},
		{
			Name: "result-write-fails", Row: "10",
			Description: "the vendor accepted, the result UPDATE fails",
			Fault:       "failpoint worker.result-update in worker-1",
			Outcome:     "error log + alert, ack; SENDING blocks redelivery; cleanup → ERROR + alert; sent once",
			Steps:       failWorker(kp.FailResultUpdate, "result-failed"),
			Expect: rules(allOnce, alerts(history.AlertResultWriteFailed, 1), alerts(history.AlertSendingTimeout, 1),
				errorDelivered(1)),
		},
		{
			Name: "worker-crash-before-ack", Row: "11",
			Description: "the result is written, the worker dies before the ack",
			Fault:       "pause-point worker.after-result (SIGSTOP) in worker-1, SIGKILLed once any ack it sent is at the broker",
			Outcome:     "redelivered → history row exists → skipped; sent once",
			Steps:       append(crashWorker(kp.WorkerAfterResult), Await(peekSkipped(1))),
			Expect:      rules(allOnce, peekSkips(1), checker.Rule{Rule: "inbox-all", Status: "SENT"}),
		},
		{
			Name: "vendor-rejects", Row: "12", PerKind: 3,
			Description: "definitely-not-sent failures: 401, 403, 429, token failure, connection refused",
			Fault:       "fake vendor answers 401 / 403 / 429×2 / token 500 once; then the vendor link is down when the next batch arrives",
			Outcome:     "claim deleted and retried (in-listener, then the retry queue); each sent once",
			Steps: []scenario.Step{
				note(during(fs(vendorMode(fakevendor.Status401, 1, 1), vendorMode(fakevendor.Status403, 2, 1),
					vendorMode(fakevendor.Status429, 3, 2), faults.Spec{Kind: faults.KindVendor, Mode: string(fakevendor.TokenFail), Times: 1}),
					inboxRows("SENT", 18), Enqueue(), pipeline()),
					"every response read and written down, so no call is in flight when the link goes down"),
				note(during(fs(linkDown("vendor")), eventWith(history.VendorCall, history.KeyCode, sms.CodeConnRefused), enqueueN(4)),
					"connection refused: the link is cut while the worker is idle (a cut mid-request would be row 9)"),
				Await(ledger(24)),
			},
			Expect: rules(allOnce),
		},
		{
			Name: "worker-crash-after-send", Row: "8/10",
			Description: "the worker dies after the vendor accepted, before the result UPDATE",
			Fault:       "pause-point worker.after-send (SIGSTOP) in worker-1, SIGKILLed once any ack it sent is at the broker",
			Outcome:     "redelivered → its SENDING claim blocks a resend; cleanup → ERROR + alert; the phone got it once",
			Steps:       append(crashWorker(kp.WorkerAfterSend), Await(peekSkipped(1))),
			Expect:      rules(allOnce, peekSkips(1), alerts(history.AlertSendingTimeout, 1), errorDelivered(1)),
		},
		{
			Name: "worker-shutdown-mid-send", Row: "§5",
			// The fake vendor holds the call until the harness recovers its
			// fault; no timer may end it first: the client's vendor timeout
			// and the SENDING timeout outlast the whole run.
			Config:      map[string]string{"vendor-timeout": "5m", "sending-timeout": "10m"},
			Description: "the worker is asked to stop (SIGTERM) while a vendor call is in flight",
			Fault:       "SIGTERM to worker-1 while the fake vendor holds its call for notification-outbox-1 (accepted, answer held); the answer (500) comes only once worker-1 said it is stopping",
			Outcome:     "steps 3–5 finish despite the stop: ERROR + alert for the unknown outcome, no resend by the next worker",
			Steps: []scenario.Step{
				Inject(vendorMode(fakevendor.AcceptHold, 1, 0)),
				Enqueue(), start("worker", "relay", "cleanup"),
				Await(scenario.Cond{InFlight: 1}),
				assert(scenario.Cond{Rows: &scenario.Rows{Table: "inbox", Status: "SENDING", Msg: 1, N: 1}}),
				note(scenario.Step{Do: "parallel", Steps: []scenario.Step{
					Inject(faults.Spec{Kind: faults.KindSigterm, Pod: "worker-1"}),
					during(fs(vendorMode(fakevendor.AcceptHold, 1, 0)), PodEvent(history.Stopping, "worker-1", 1)),
				}}, "the held call is answered (its fault recovered) only once worker-1 has been asked to stop; the SIGTERM returns when worker-1 exited"),
				start("worker"),
			},
			Expect: rules(allOnce, alerts(history.AlertVendorUnknown, 1), errorDelivered(1)),
		},
		{
			Name: "unroutable-publish", Row: "§4",
			Description: "the exchange has no binding for the main queue when the relay publishes",
			Fault:       "the operator unbinds the main queue; mandatory publishes come back as basic.return (and are still acked)",
			Outcome:     "a returned message is a failure: PENDING with backoff, republished once the binding is back; sent once",
			Steps: []scenario.Step{
				pipeline(), Await(allOf(PodEvent(history.Start, "relay-", 1), PodEvent(history.ConsumeStart, "worker-", 1))),
				during(fs(faults.Spec{Kind: faults.KindUnbind}), eventWith(history.Publish, history.KeyOutcome, history.OutcomeReturned), Enqueue()),
			},
			Expect: rules(allOnce, checker.Rule{Rule: "returned-counted"}),
		},
		{
			Name: "claim-response-lost", Row: "extra",
			Description: "the claim INSERT commits but its response never reaches the worker",
			Fault:       "failpoint worker.claim-response in worker-1 (error after the commit)",
			Outcome:     "requeued; the copy finds its own SENDING row and does not send; cleanup → ERROR + alert (lost, visibly)",
			Steps:       failWorker(kp.FailClaimResponse, "claim-failed"),
			Expect:      rules(lost(1), alerts(history.AlertSendingTimeout, 1)),
		},
		{
			Name: "release-response-lost", Row: "extra",
			Description: "a definite not-sent frees the claim: the DELETE commits but its answer never reaches the worker",
			Fault:       "fake vendor answers 429 once for notification-outbox-1; failpoint worker.release-response in worker-1 (error after the commit)",
			Outcome:     "requeued, never acked; the copy finds no row, claims and sends: once, with a CLAIM_RELEASE_FAILED alert (acking it lost the message silently)",
			Steps: []scenario.Step{
				Inject(vendorMode(fakevendor.Status429, 1, 1)),
				Enqueue(), StartWith("worker", fail(kp.FailReleaseResponse)), start("relay", "cleanup"),
				Await(eventOf(history.ReleaseFailed)),
			},
			Expect: rules(allOnce, alerts(history.AlertClaimReleaseFailed, 1)),
		},
		{
			Name: "anniversary-outbox-fails", Row: "extra", PerKind: 2,
			Kinds:       []notification.Kind{notification.AnniversaryCoupon},
			Description: "the anniversary job issued the coupon, then its outbox insert fails",
			Fault:       "failpoint job.anniversary-outbox-insert in the job pod",
			Outcome:     "the notification is lost on purpose (never twice) with an ANNIVERSARY_LOST alert; the other is sent once",
			Steps: []scenario.Step{
				{Do: "enqueue", Faults: fs(fail(kp.FailAnniversaryOutbox))},
				assert(scenario.Cond{Rows: &scenario.Rows{Table: "coupons", N: 2}}),
				pipeline(),
			},
			Expect: rules(lost(1), alerts(history.AlertAnniversaryLost, 1), handsets(1)),
		},
		{
			Name: "anniversary-crash-after-coupon", Row: "1", PerKind: 2,
			Kinds:       []notification.Kind{notification.AnniversaryCoupon},
			Description: "the anniversary job dies after committing a coupon, before its outbox insert; the job is re-run",
			Fault:       "kill-point job.after-coupon (SIGKILL) in the job pod, then a second job run",
			Outcome:     "the coupon and its outbox row commit together: the crash leaves neither, the re-run issues and enqueues both; both sent once",
			Steps: []scenario.Step{
				StartWith("job", Kill(kp.JobAfterCoupon)), Await(killed("job-1")),
				assert(scenario.Cond{Rows: &scenario.Rows{Table: "coupons", N: 0}}), assert(outboxRows("", 0)),
				Enqueue(), pipeline(),
			},
			Expect: rules(allOnce, handsets(2)),
		},
		adCutoffDeferral("ad-cutoff-deferral", "20:39:50", "advertising messages reach the relay after 20:40",
			"clock: the relay starts at 20:40:00, then a relay runs the next day at 08:00",
			"ads deferred to 08:00 next day (not sent after the cut-off); past their scheduled date they are EXPIRED + alert; the rest sent once"),
		{
			Name: "parking-replay", Row: "extra", Kinds: []notification.Kind{notification.GradeRenewal},
			// Under chaos-load a park's confirm came after the compressed
			// 600 ms (a legal retry: parked twice, alerted twice) and a 401
			// after the 500 ms client timeout. No call hangs here.
			Config:      map[string]string{"confirm-timeout": "5m", "vendor-timeout": "5m", "sending-timeout": "10m"},
			Description: "an operator moves a parked message back to the main queue, twice",
			Fault:       "vendor 401 until parked; then the operator replays the parked copy, and replays it again after it was sent",
			Outcome:     "the first replay sends it once; the replay after it was sent is absorbed by the inbox",
			Steps: []scenario.Step{
				during(fs(vendorMode(fakevendor.Status401, 1, 0)), eventOf(history.Park), Enqueue(), pipeline()),
				Inject(faults.Spec{Kind: faults.KindReplayParked, Msg: 1}),
				Await(ledger(1)), Await(inboxRows("SENT", 1)),
				Inject(faults.Spec{Kind: faults.KindReplayParked, Msg: 1}),
				note(Await(peekSkipped(1)), "the second replay absorbed"),
			},
			Expect: rules(allOnce, alerts(history.AlertParked, 1)),
		},
		{
			Name: "poison-messages", Row: "§5",
			// Under chaos-load a park's confirm came after the compressed
			// 600 ms: a legal retry that parks and alerts twice.
			Config:      map[string]string{"confirm-timeout": "5m"},
			Description: "messages no relay wrote reach the main queue: an unknown kind, a missing template, a fallback over 2,000 EUC-KR bytes, a malformed payload, a message_id over 100 characters",
			Fault:       "the operator publishes five poison messages straight to the main queue once the worker consumes",
			Outcome:     "each parked with its x-failure-reason and a PARKED alert, never sent to the vendor; every real notification sent once",
			Steps: []scenario.Step{
				Enqueue(), pipeline(), Await(PodEvent(history.ConsumeStart, "worker-", 1)),
				Inject(poison("unknown-kind"), poison("missing-template"), poison("long-fallback"), poison("malformed"), poison("long-message-id")),
				Await(scenario.Cond{Event: &scenario.EventCond{Name: history.Park, N: 5}}),
			},
			Expect: rules(allOnce, checker.Rule{Rule: "parked", N: 5}, alerts(history.AlertParked, 5), handsets(6)),
		},
		{
			Name: "worker-crash-after-park", Row: "12",
			Kinds: []notification.Kind{notification.GradeRenewal, notification.MonthlyAwardsWinning},
			// The 401 must reach the worker as a 401 and park it at once:
			// under chaos-load (load 36–55) the compressed 500 ms client
			// timeout turned one into an unknown outcome (ERROR, never
			// parked), and the path through every retry, with 600 ms
			// confirm timeouts on its republishes, outlasted the 30 s await.
			// No call hangs here: the timeouts outlast the run at no cost,
			// and the first 401 parks.
			Config: map[string]string{"vendor-timeout": "5m", "sending-timeout": "10m", "confirm-timeout": "5m",
				"in-listener-retries": "0", "retry-max": "0"},
			Description: "the worker dies right after moving a message to the parking queue",
			Fault:       "vendor 401 for notification-outbox-1, parked on the first (no retries); pause-point worker.after-park (SIGSTOP) in worker-1, SIGKILLed once the broker has taken its ack",
			Outcome:     "the parked message already has its PARKED alert (nothing looks at a parked message again): lost visibly, never silently; the other message is sent once",
			// A basic.ack is not confirmed: a kill right after it may lose
			// it, and the redelivery that follows is legal (and parks
			// again). The kill waits until the broker shows it took the
			// ack: with prefetch 1 it hands the frozen worker a second
			// message only then.
			Steps: []scenario.Step{
				Inject(vendorMode(fakevendor.Status401, 1, 0)),
				{Do: "enqueue", Kinds: []notification.Kind{notification.GradeRenewal}},
				StartWith("worker", faults.Spec{Kind: faults.KindPausePoint, Point: kp.WorkerAfterPark}), start("relay", "cleanup"),
				note(Await(scenario.Cond{Paused: "worker-1"}), "worker-1 parked notification-outbox-1, acked it and froze"),
				note(scenario.Step{Do: "enqueue", Kinds: []notification.Kind{notification.MonthlyAwardsWinning}},
					"a second message: with prefetch 1 the broker hands it to worker-1 only once it has taken the ack"),
				note(Await(allOf(outboxRows("PUBLISHED", 2), queued("main", 0))),
					"notification-outbox-2 reached the main queue and left it for the frozen worker-1: the broker has the ack"),
				note(restart("worker-1"), "SIGKILL, then a new worker-1: the unacked notification-outbox-2 comes back to it"),
				Await(ledger(1)),
			},
			Expect: rules(lost(1), alerts(history.AlertParked, 1), handsets(1)),
		},
		{
			Name: "schema-race", Row: "§7", SelfMigrate: true,
			Description: "six instances migrate a fresh schema while another instance is part-way through its migration",
			Fault:       "a migration held open (its advisory lock taken, CREATE TABLE members uncommitted) until six migrate pods wait on it",
			Outcome:     "they wait for pg_advisory_lock and then all succeed (without it: 23505 on pg_type_typname_nsp_index); the pipeline then sends each once",
			Steps: []scenario.Step{
				during(fs(faults.Spec{Kind: faults.KindHoldMigration}), scenario.Cond{Migrators: 6},
					start("migrate", "migrate", "migrate", "migrate", "migrate", "migrate")),
				Await(scenario.Cond{Succeeded: "migrate-"}),
				Enqueue(), pipeline(),
			},
			Expect: rules(allOnce),
		},
		{
			Name: "crash-after-error-result", Row: "9",
			Description: "the worker dies right after committing ERROR for an unknown vendor outcome",
			Fault:       "fake vendor hang for notification-outbox-1; pause-point worker.after-error-result (SIGSTOP) in worker-1, SIGKILLed once any ack it sent is at the broker",
			Outcome:     "the ERROR row is final and nothing looks at it again, so its VENDOR_UNKNOWN alert must already be out: lost visibly, never silently",
			Steps:       append([]scenario.Step{Inject(vendorMode(fakevendor.Hang, 1, 0))}, crashWorker(kp.WorkerAfterErrorResult)...),
			Expect:      rules(lost(1), alerts(history.AlertVendorUnknown, 1)),
		},
		{
			Name: "crash-after-expiry", Row: "2*",
			Description: "the relay dies right after committing EXPIRED for a row past its scheduled date",
			Fault:       "clock: the relays run the next day; kill-point relay.after-finish (SIGKILL) in relay-1",
			Outcome:     "the EXPIRED row is final, so its alert must already be out: every row EXPIRED with its alert, nothing sent",
			Steps: []scenario.Step{
				Enqueue(), start("worker", "cleanup"),
				StartWith("relay", ClockAt("+1d 10:00"), Kill(kp.RelayAfterFinish)), Await(killed("relay-1")),
				StartWith("relay", ClockAt("+1d 10:00")), Await(outboxRows("EXPIRED", 6)),
			},
			Expect: rules(lost(6), alerts(history.AlertExpired, 6), handsets(0)),
		},
		{
			Name: "broker-restart", Row: "extra", PerKind: 5,
			Description: "every RabbitMQ connection is cut mid-stream and refused for a while",
			Fault:       "both RabbitMQ links down after the 5th message reached a handset, until a pod reconnects",
			Outcome:     "relay and worker reconnect; nothing lost, nothing twice",
			Steps: []scenario.Step{
				Enqueue(), pipeline(), Await(ledger(5)),
				{Do: "during", Faults: fs(linkDown("rabbitmq-relay"), linkDown("rabbitmq-worker")), Cond: &scenario.Cond{Event: &scenario.EventCond{Name: history.Reconnect}},
					Timeout: faults.Duration(10 * time.Second)},
			},
			Expect: rules(allOnce),
		},
	}
}

// vendorUnknown builds row 9: two notifications meet an indefinite vendor
// failure, one after it reached the phone (sent) and one before (not sent).
func vendorUnknown(name string, sent, notSent fakevendor.Mode, desc string) *scenario.Scenario {
	return &scenario.Scenario{
		Name: name, Row: "9", Description: desc,
		Fault:   "fake vendor " + string(sent) + " for notification-outbox-1 and " + string(notSent) + " for notification-outbox-2",
		Outcome: "both ERROR + alert, never retried; the one that went out reached the phone once, the other is lost visibly",
		Steps: []scenario.Step{
			Inject(vendorMode(sent, 1, 0), vendorMode(notSent, 2, 0)),
			Enqueue(), pipeline(), Await(inboxRows("ERROR", 2)),
		},
		Expect: rules(lost(1), alerts(history.AlertVendorUnknown, 2), errorDelivered(1), vendorCalls(1, 1), vendorCalls(2, 1)),
	}
}

// adCutoffDeferral: the relay first runs at 20:40:00 on the day Start
// names, then a relay runs at 08:00 the next day; two ads wait, expire.
func adCutoffDeferral(name, at, desc, fault, outcome string) *scenario.Scenario {
	return &scenario.Scenario{
		Name: name, Row: "2*", Start: at, Description: desc, Fault: fault, Outcome: outcome,
		Steps: []scenario.Step{
			Enqueue(), start("worker", "cleanup"), StartWith("relay", ClockAt("20:40")),
			Await(scenario.Cond{Rows: &scenario.Rows{Table: "outbox", Status: "PENDING", Reason: "AD_CUTOFF_DEFERRED", Advertising: true, N: 2}}),
			Await(ledger(4)), stop("relay-1"),
			StartWith("relay", ClockAt("+1d 08:00")), Await(outboxRows("EXPIRED", 2)),
		},
		Expect: rules(lost(2), alerts(history.AlertExpired, 2), handsets(4)),
	}
}

// crashWorker: worker-1 dies at a kill-point on its first message and is
// restarted, as a deployment would.
//
// A basic.ack is not confirmed: a SIGKILL right after worker-1 acked may
// or may not lose the ack (it crosses a Toxiproxy link), and the
// redelivery that follows a lost one is legal. So worker-1 freezes at the
// point and is killed only once whatever it acked before it is provably
// at the broker: it never acked, or the broker (prefetch 1) handed it the
// next message, which it does only after the ack — every message
// published and the main queue two short. The canaries that
// ack early (auto-ack, ack-before-result) are caught on this, not on how
// fast the ack frame left before the kill.
func crashWorker(point string) []scenario.Step {
	n := len(notification.Kinds) // enqueue(): one per kind
	return []scenario.Step{Enqueue(), StartWith("worker", faults.Spec{Kind: faults.KindPausePoint, Point: point}), start("relay", "cleanup"),
		note(Await(scenario.Cond{Paused: "worker-1"}), "worker-1 froze at "+point),
		note(Await(anyOf(scenario.Cond{NoEvent: &scenario.EventCond{Name: history.Ack, Pod: "worker-1"}},
			allOf(outboxRows("PUBLISHED", n), queued("main", n-2)))),
			"worker-1 never acked, or the broker took its ack: it handed worker-1 the next message"),
		note(restart("worker-1"), "SIGKILL at the point, then a new worker-1"),
	}
}

// strandClaims: n workers in turn (worker-1 … worker-n) each freeze right
// after the claim of a fresh message committed and are SIGKILLed there,
// leaving n SENDING rows no worker will finish. The copies the workers
// killed before held reach the next one first and stop at its peek (their
// rows exist), so each worker's first claim is a message of its own. Under
// single-active-consumer with prefetch 1 nothing else is delivered while a
// worker is frozen, and it acked nothing it could lose: its only acks, at
// the peek, preceded the delivery it froze on.
func strandClaims(n int) []scenario.Step {
	var out []scenario.Step
	for i := 1; i <= n; i++ {
		pod := fmt.Sprintf("worker-%d", i)
		out = append(out,
			StartWith("worker", faults.Spec{Kind: faults.KindPausePoint, Point: kp.WorkerAfterClaim}),
			note(Await(scenario.Cond{Paused: pod}), pod+" froze right after its claim committed"),
			assert(inboxRows("SENDING", i)),
			note(Inject(faults.Spec{Kind: faults.KindKill, Pod: pod}), "its delivery goes back to the queue unacked"))
	}
	return out
}

// failWorker: a failpoint in worker-1, until the event its failure logs.
func failWorker(point, event string) []scenario.Step {
	return []scenario.Step{Enqueue(), StartWith("worker", fail(point)), start("relay", "cleanup"), Await(eventOf(event))}
}

// Lookup returns the scenario named name.
func Lookup(name string) (*scenario.Scenario, bool) {
	for _, s := range Named() {
		if s.Name == name {
			return s, true
		}
	}
	return nil, false
}

// Names lists every scenario name in catalogue order.
func Names() []string {
	var out []string
	for _, s := range Named() {
		out = append(out, s.Name)
	}
	return out
}
