package reports

import "github.com/outboxchaos/outboxchaos/checker"

// writeReconciled renders the random schedules without and with a
// reconciler that re-sends, on the same seed, side by side.
func writeReconciled(p func(string, ...any), r Reliability) {
	if len(r.Reconciled) == 0 {
		return
	}
	off, on := totals(r.Property[:len(r.Reconciled)]), totals(r.Reconciled)
	failed := 0
	for _, pr := range r.Reconciled {
		if !pr.Result.Pass() {
			failed++
		}
	}
	p("## Reconciliation: the same schedules without and with it\n\n")
	p("Each of the %d schedules above ran a second time with a reconciler that re-sends (`--reconcile-resend`, docs/reconcile.md); "+
		"%d of those runs failed the contract. \"Unknown\" is the part of the visible losses still awaiting an operator: ERROR rows nobody settled.\n\n",
		len(r.Reconciled), failed)
	p("| | without | with |\n|---|---|---|\n")
	row := func(name string, a, b int) { p("| %s | %d | %d |\n", name, a, b) }
	row("intents", off.Intents, on.Intents)
	row("delivered once", off.DeliveredOnce, on.DeliveredOnce)
	row("duplicated", off.Duplicated, on.Duplicated)
	row("lost silently", off.LostSilently, on.LostSilently)
	row("lost visibly", off.LostVisibly, on.LostVisibly)
	row("… of which unknown (an operator must settle it)", off.Unknown, on.Unknown)
	row("settled SENT from the report", off.ReconciledSent, on.ReconciledSent)
	row("settled FAILED (a certain loss)", off.ReconciledFailed, on.ReconciledFailed)
	row("re-sent", off.Resent, on.Resent)
	row("settlements the handset contradicts", off.Misreconciled, on.Misreconciled)
	row("deferred", off.Deferred, on.Deferred)
	row("stuck", off.Stuck, on.Stuck)
	p("\n")
}

// totals adds up the verdicts of runs.
func totals(runs []PropertyRun) checker.Verdict {
	var t checker.Verdict
	for _, pr := range runs {
		v := pr.Result.Verdict
		t.Intents += v.Intents
		t.DeliveredOnce += v.DeliveredOnce
		t.Duplicated += v.Duplicated
		t.LostSilently += v.LostSilently
		t.LostVisibly += v.LostVisibly
		t.Unknown += v.Unknown
		t.ReconciledSent += v.ReconciledSent
		t.ReconciledFailed += v.ReconciledFailed
		t.Resent += v.Resent
		t.Misreconciled += v.Misreconciled
		t.Skipped += v.Skipped
		t.Deferred += v.Deferred
		t.Unexpected += v.Unexpected
		t.Stuck += v.Stuck
	}
	return t
}
