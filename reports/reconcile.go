package reports

import (
	"strings"

	"github.com/outboxchaos/outboxchaos/checker"
	"github.com/outboxchaos/outboxchaos/scenarios"
)

// writeReconciled renders the random schedules without and with a
// reconciler that re-sends, on the same seed, side by side.
func writeReconciled(p func(string, ...any), r Reliability) {
	if len(r.Reconciled) == 0 {
		return
	}
	off, on := totals(r.Property[:len(r.Reconciled)]), totals(r.Reconciled)
	failed, errored := 0, 0
	for _, pr := range r.Reconciled {
		switch pr.Result.Outcome() {
		case scenarios.OutcomeFail:
			failed++
		case scenarios.OutcomeError:
			errored++
		}
	}
	p("## Reconciliation: the same schedules without and with it\n\n")
	p("Each of the %d schedules above ran a second time with a reconciler that re-sends (`--reconcile-resend`, docs/reconcile.md); "+
		"%d of those runs failed the contract%s. The visible losses are split by cause: only an unknown outcome (an ERROR row) is the reconciler's to settle; "+
		"the others are certain by design (past the scheduled date, definitely rejected, lost on purpose).\n\n",
		len(r.Reconciled), failed, notJudged(errored))
	p("| | without | with |\n|---|---|---|\n")
	row := func(name string, a, b int) { p("| %s | %d | %d |\n", name, a, b) }
	row("intents", off.Intents, on.Intents)
	row("delivered once", off.DeliveredOnce, on.DeliveredOnce)
	row("duplicated", off.Duplicated, on.Duplicated)
	row("lost silently", off.LostSilently, on.LostSilently)
	row("lost visibly", off.LostVisibly, on.LostVisibly)
	offCause, onCause := lossCauses(r.Property[:len(r.Reconciled)]), lossCauses(r.Reconciled)
	for _, c := range causeOrder {
		row("… "+c, offCause[c], onCause[c])
	}
	row("settled SENT from the report", off.ReconciledSent, on.ReconciledSent)
	row("settled FAILED (a certain loss)", off.ReconciledFailed, on.ReconciledFailed)
	row("re-sent", off.Resent, on.Resent)
	row("settlements the handset contradicts", off.Misreconciled, on.Misreconciled)
	row("deferred", off.Deferred, on.Deferred)
	row("stuck", off.Stuck, on.Stuck)
	p("\n")
}

// totals adds up the verdicts of the judged runs: a run not judged counts
// nothing (its counts are of a pipeline stopped half-way, or of no state).
func totals(runs []PropertyRun) checker.Verdict {
	var t checker.Verdict
	for _, pr := range runs {
		if pr.Result.Outcome() == scenarios.OutcomeError {
			continue
		}
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

// The causes of visible losses, as the checker's details name them; only
// the first is what a reconciler can settle.
var causeOrder = []string{
	"of which unknown outcome (inbox ERROR: an operator must settle it)",
	"of which inbox FAILED (a definite failure, or settled FAILED)",
	"of which EXPIRED (past the scheduled date)",
	"of which parked (definitely not sent, retries spent)",
	"of which outbox FAILED (undecodable payload)",
	"of which never enqueued (anniversary outbox insert failed)",
}

// lossCauses counts the visible losses of runs by cause.
func lossCauses(runs []PropertyRun) map[string]int {
	out := map[string]int{}
	for _, pr := range runs {
		if pr.Result.Outcome() == scenarios.OutcomeError {
			continue
		}
		for _, d := range pr.Result.Verdict.Details {
			if !strings.HasPrefix(d, "lost visibly: ") {
				continue
			}
			switch {
			case strings.Contains(d, " inbox ERROR "):
				out[causeOrder[0]]++
			case strings.Contains(d, " inbox FAILED "):
				out[causeOrder[1]]++
			case strings.Contains(d, " EXPIRED "):
				out[causeOrder[2]]++
			case strings.Contains(d, " parked ("):
				out[causeOrder[3]]++
			case strings.Contains(d, " FAILED "):
				out[causeOrder[4]]++
			case strings.Contains(d, "never enqueued"):
				out[causeOrder[5]]++
			}
		}
	}
	return out
}
