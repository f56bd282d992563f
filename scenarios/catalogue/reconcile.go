package catalogue

import (
	"github.com/outboxchaos/outboxchaos/checker"
	"github.com/outboxchaos/outboxchaos/fakevendor"
	"github.com/outboxchaos/outboxchaos/history"
	"github.com/outboxchaos/outboxchaos/scenarios/scenario"
	kp "github.com/outboxchaos/outboxchaos/system/killpoint"
)

// reconcileCases is the reconciler's part of the catalogue
// (docs/reconcile.md): the unknown-outcome rows with reconciliation on,
// the late-landing window, reports that lie or fail, the reconciler
// crashed at each of its steps, two reconcilers at once.
func reconcileCases() []*scenario.Scenario {
	return []*scenario.Scenario{
		{
			Name: "reconcile-worker-crash-after-claim", Row: "8+R", Config: resendOn,
			Description: "row 8 with reconciliation: the worker is killed after its claim, before the vendor call",
			Fault:       "kill-point worker.after-claim (SIGKILL) in worker-1; the reconciler runs with --reconcile-resend",
			Outcome:     "cleanup → ERROR + alert; the final report says twice it never arrived → re-sent once; every notification sent once",
			Steps: []scenario.Step{
				Enqueue(), StartWith("worker", Kill(kp.WorkerAfterClaim)), start("relay", "cleanup", "reconciler"),
				Await(killed("worker-1")), restart("worker-1"),
			},
			Expect: rules(allOnce, alerts(history.AlertSendingTimeout, 1), settled(history.SettledResent, 1), alerts(history.AlertResent, 1)),
		},
		reconciledUnknown("reconcile-vendor-timeout", fakevendor.AcceptHang, fakevendor.Hang,
			"row 9 with reconciliation: the vendor call times out, once after the message reached the phone, once before"),
		reconciledUnknown("reconcile-vendor-5xx", fakevendor.Accept5xx, fakevendor.Fail5xx,
			"row 9 with reconciliation: the vendor answers 5xx, once after the message reached the phone, once before"),
		{
			Name: "reconcile-odd-answers", Row: "9+R", Config: resendOn,
			Description: "the odd HTTP 200 answers with reconciliation: a failure code, a late body, a body that is not JSON",
			Fault:       "fake vendor fail-code for notification-outbox-1, late-body for -2, malformed for -3 (once each); the reconciler runs with --reconcile-resend",
			Outcome:     "-2 and -3 settled SENT from the report; -1 never received → re-sent once; every notification sent once",
			Steps: []scenario.Step{
				Inject(vendorMode(fakevendor.FailCode, 1, 1), vendorMode(fakevendor.LateBody, 2, 1), vendorMode(fakevendor.Malformed, 3, 1)),
				Enqueue(), reconciled(),
			},
			Expect: rules(allOnce, settled(history.SettledSent, 2), settled(history.SettledResent, 1), vendorCalls(1, 2), vendorCalls(2, 1), vendorCalls(3, 1)),
		},
		{
			Name: "reconcile-without-resend", Row: "9+R",
			Description: "row 9 with reconciliation but no re-send: the unknown outcomes are settled, not retried",
			Fault:       "fake vendor accept-hang for notification-outbox-1 and hang for notification-outbox-2; the reconciler runs without --reconcile-resend",
			Outcome:     "outbox-1 settled SENT (it reached the phone), outbox-2 settled FAILED NEVER_RECEIVED with an alert: a visible loss that is now certain",
			Steps: []scenario.Step{
				Inject(vendorMode(fakevendor.AcceptHang, 1, 1), vendorMode(fakevendor.Hang, 2, 1)),
				Enqueue(), reconciled(),
			},
			Expect: rules(lost(1), settled(history.SettledSent, 1), settled(history.SettledFailed, 1),
				alerts(history.AlertReconciledFailed, 1), vendorCalls(2, 1)),
		},
		{
			Name: "reconcile-result-write-fails", Row: "10+R", Config: resendOn,
			Description: "row 10 with reconciliation: the vendor accepted, the result UPDATE fails",
			Fault:       "failpoint worker.result-update in worker-1; the reconciler runs with --reconcile-resend",
			Outcome:     "cleanup → ERROR + alert; the final report has it → settled SENT, never re-sent; sent once",
			Steps: []scenario.Step{
				Enqueue(), StartWith("worker", fail(kp.FailResultUpdate)), start("relay", "cleanup", "reconciler"),
				Await(eventOf(history.ResultFailed)),
			},
			Expect: rules(allOnce, alerts(history.AlertResultWriteFailed, 1), settled(history.SettledSent, 1), settled(history.SettledResent, 0)),
		},
		{
			Name: "reconcile-claim-response-lost", Row: "extra+R", Config: resendOn,
			Description: "with reconciliation: the claim INSERT commits but its response never reaches the worker",
			Fault:       "failpoint worker.claim-response in worker-1; the reconciler runs with --reconcile-resend",
			Outcome:     "cleanup → ERROR + alert; never received → re-sent once; every notification sent once",
			Steps: []scenario.Step{
				Enqueue(), StartWith("worker", fail(kp.FailClaimResponse)), start("relay", "cleanup", "reconciler"),
				Await(eventOf(history.ClaimFailed)),
			},
			Expect: rules(allOnce, alerts(history.AlertSendingTimeout, 1), settled(history.SettledResent, 1)),
		},
		{
			Name: "late-landing", Row: "R", Config: resendOn,
			Description: "the original request is still in flight when the reconciler looks: it lands right after the vendor said it never arrived",
			Fault:       "fake vendor land-late for notification-outbox-1: no answer (the worker times out, ERROR), and the request lands as soon as the vendor has answered the first lookup for it",
			Outcome:     "the first lookup comes after the request's expireat, so the vendor drops it when it lands; never received twice → re-sent once; sent once",
			Steps:       []scenario.Step{Inject(vendorMode(fakevendor.LandLate, 1, 1)), Enqueue(), reconciled()},
			Expect:      rules(allOnce, settled(history.SettledResent, 1), vendorCalls(1, 2), handsets(6)),
		},
		{
			Name: "late-landing-no-resend", Row: "R",
			Description: "the late-landing window without re-sends: the settlement must match what the phone got",
			Fault:       "fake vendor land-late for notification-outbox-1; the reconciler runs without --reconcile-resend",
			Outcome:     "the late request is dropped (past its expireat); settled FAILED NEVER_RECEIVED, and the phone indeed never got it",
			Steps:       []scenario.Step{Inject(vendorMode(fakevendor.LandLate, 1, 1)), Enqueue(), reconciled()},
			Expect:      rules(lost(1), settled(history.SettledFailed, 1), handsets(5)),
		},
		{
			Name: "report-disagrees", Row: "R", Config: resendOn,
			Description: "the vendor's report contradicts itself: first a failure, then not found, then the truth",
			Fault:       "fake vendor accept-hang for notification-outbox-1; its report says FAILED once, then not found once (a late report)",
			Outcome:     "nothing is settled until two lookups agree: settled SENT, no FAILED alert, never re-sent",
			Steps: []scenario.Step{
				Inject(vendorMode(fakevendor.AcceptHang, 1, 1), vendorMode(fakevendor.ReportWrong, 1, 1), vendorMode(fakevendor.ReportMissing, 1, 1)),
				Enqueue(), reconciled(),
			},
			Expect: rules(allOnce, settled(history.SettledSent, 1), alerts(history.AlertReconciledFailed, 0), vendorCalls(1, 1)),
		},
		{
			Name: "lookup-fails", Row: "R", Config: resendOn,
			Description: "the lookups themselves fail: a 5xx, a hang past the client timeout, a malformed body, a pending report",
			Fault:       "fake vendor accept-hang for notification-outbox-1; its lookups meet lookup-5xx, lookup-hang, lookup-malformed and report-pending once each",
			Outcome:     "each failed lookup leaves the row as it was; then settled SENT; no stuck alert",
			Steps: []scenario.Step{
				Inject(vendorMode(fakevendor.AcceptHang, 1, 1), vendorMode(fakevendor.Lookup5xx, 1, 1), vendorMode(fakevendor.LookupHang, 1, 1),
					vendorMode(fakevendor.LookupMalformed, 1, 1), vendorMode(fakevendor.ReportPending, 1, 1)),
				Enqueue(), reconciled(),
			},
			Expect: rules(allOnce, settled(history.SettledSent, 1), alerts(history.AlertReconcileStuck, 0), vendorCalls(1, 1)),
		},
		{
			Name: "reconcile-gives-up", Row: "R", Config: resendOn,
			Description: "the vendor's report never answers: the reconciler stops after its bounded tries and tells an operator",
			Fault:       "fake vendor hang for notification-outbox-1; every lookup for it answers 503",
			Outcome:     "the row stays ERROR (lost visibly, still unknown) with a RECONCILE_STUCK alert after the last try; nothing re-sent",
			Steps: []scenario.Step{
				Inject(vendorMode(fakevendor.Hang, 1, 1), vendorMode(fakevendor.Lookup5xx, 1, 0)),
				Enqueue(), reconciled(),
			},
			Expect: rules(lost(1), alerts(history.AlertReconcileStuck, 1), settled(history.SettledResent, 0), vendorCalls(1, 1)),
		},
		crashReconciler("reconciler-crash-after-lookup", kp.ReconcileAfterLookup, fakevendor.AcceptHang,
			"the restarted reconciler looks again from the start; settled SENT, never re-sent",
			settled(history.SettledSent, 1), vendorCalls(1, 1)),
		crashReconciler("reconciler-crash-before-settle", kp.ReconcileBeforeSettle, fakevendor.AcceptHang,
			"the settlement's alert is out, its write is not: the restarted reconciler looks again and settles SENT, alerting a second time (twice, never none)",
			settled(history.SettledSent, 1), alerts(history.AlertReconciledSent, 2), vendorCalls(1, 1)),
		crashReconciler("reconciler-crash-after-resend-claim", kp.ReconcileAfterResendClaim, fakevendor.Hang,
			"the row stays RESENDING until cleanup turns it into ERROR + alert; looked up again after its new claim and re-sent by the restarted reconciler; sent once",
			settled(history.SettledResent, 1), alerts(history.AlertSendingTimeout, 1), vendorCalls(1, 2)),
		crashReconciler("reconciler-crash-after-resend", kp.ReconcileAfterResend, fakevendor.Hang,
			"the re-send reached the phone but its result was never written: cleanup → ERROR + alert; the final report has it → settled SENT; sent once, never a third call",
			settled(history.SettledSent, 1), alerts(history.AlertSendingTimeout, 1), vendorCalls(1, 2)),
		{
			Name: "two-reconcilers", Row: "R", PerKind: 2,
			Config:      map[string]string{"reconcile-resend": "true", "reconcile-lock-ttl": "1ms"},
			Description: "two reconcilers run at once: their scheduler lock expires at once, so both look up and settle the same rows",
			Fault:       "fake vendor hang for notification-outbox-1, -2 and -3; two reconciler pods with a 1 ms lock",
			Outcome:     "every write is conditional on the row as read: each message re-sent exactly once; every notification sent once",
			Steps: []scenario.Step{
				Inject(vendorMode(fakevendor.Hang, 1, 1), vendorMode(fakevendor.Hang, 2, 1), vendorMode(fakevendor.Hang, 3, 1)),
				Enqueue(), start("relay", "worker", "cleanup", "reconciler", "reconciler"),
			},
			Expect: rules(allOnce, settled(history.SettledResent, 3), vendorCalls(1, 2), vendorCalls(2, 2), vendorCalls(3, 2)),
		},
	}
}

// resendOn runs the reconciler with --reconcile-resend.
var resendOn = map[string]string{"reconcile-resend": "true"}

// reconciled starts the pipeline with a reconciler.
func reconciled() scenario.Step { return start("relay", "worker", "cleanup", "reconciler") }

// settled: exactly n inbox rows settled as how.
func settled(how string, n int) checker.Rule { return checker.Rule{Rule: "settled", Status: how, N: n} }

// reconciledUnknown is row 9 with reconciliation and re-sends: one message
// met the vendor fault after it reached the phone, one before.
func reconciledUnknown(name string, sent, notSent fakevendor.Mode, desc string) *scenario.Scenario {
	return &scenario.Scenario{
		Name: name, Row: "9+R", Description: desc, Config: resendOn,
		Fault:   "fake vendor " + string(sent) + " for notification-outbox-1 and " + string(notSent) + " for notification-outbox-2 (once each); the reconciler runs with --reconcile-resend",
		Outcome: "both ERROR + alert; outbox-1 settled SENT from the report, outbox-2 never received → re-sent once; every notification sent once",
		Steps: []scenario.Step{
			Inject(vendorMode(sent, 1, 1), vendorMode(notSent, 2, 1)),
			Enqueue(), reconciled(),
		},
		Expect: rules(allOnce, alerts(history.AlertVendorUnknown, 2), settled(history.SettledSent, 1), settled(history.SettledResent, 1),
			vendorCalls(1, 1), vendorCalls(2, 2)),
	}
}

// crashReconciler: notification-outbox-1 meets vendor mode m once (an
// unknown outcome), reconciler-1 dies at point and is restarted, as a
// deployment would. Two re-sends are allowed, so a crash after a re-send
// claim does not use up the only one.
func crashReconciler(name, point string, m fakevendor.Mode, outcome string, expect ...checker.Rule) *scenario.Scenario {
	return &scenario.Scenario{
		Name: name, Row: "R", Outcome: outcome,
		Config:      map[string]string{"reconcile-resend": "true", "reconcile-max-resends": "2"},
		Description: "the reconciler is killed at " + point,
		Fault:       "fake vendor " + string(m) + " for notification-outbox-1 once; kill-point " + point + " (SIGKILL) in reconciler-1",
		Steps: []scenario.Step{
			Inject(vendorMode(m, 1, 1)), Enqueue(), pipeline(),
			StartWith("reconciler", Kill(point)), Await(killed("reconciler-1")), restart("reconciler-1"),
		},
		Expect: append(rules(allOnce), expect...),
	}
}
