package explore

import (
	"context"

	"github.com/outboxchaos/outboxchaos/scenarios"
	"github.com/outboxchaos/outboxchaos/scenarios/catalogue"
	"github.com/outboxchaos/outboxchaos/system/canary"
)

// Catchers maps each canary bug (system/canary) to the named scenarios that
// must go red when it is enabled. The sweep proves the harness can fail.
var Catchers = map[string][]string{
	canary.MarkBeforePublish:   {"relay-crash-after-claim"},
	canary.CheckThenAct:        {"worker-crash-after-send", "worker-crash-after-claim", "claim-race-past-peek"},
	canary.RetryUnknown:        {"vendor-timeout", "vendor-5xx", "vendor-odd-answers"},
	canary.ReleaseOnCancel:     {"worker-shutdown-mid-send"},
	canary.NoSkipLocked:        {"overlapping-relays"},
	canary.NoClaimedBy:         {"stale-relay"},
	canary.AckBeforeResult:     {"worker-crash-after-send", "worker-crash-before-ack"},
	canary.FreshMessageID:      {"relay-crash-after-confirm"},
	canary.ReturnedAsPublished: {"unroutable-publish"},
	canary.TimeoutAsConfirmed:  {"confirm-timeout"},
	canary.NoCleanupAlert:      {"result-write-fails", "claim-response-lost"},
	canary.RateLimitAsUnknown:  {"vendor-rejects"},
	canary.SilentAnniversary:   {"anniversary-outbox-fails"},
	canary.NoAdDeferral:        {"ad-cutoff-deferral"},
	canary.NoExpiry:            {"expired-before-relay"},
	canary.PlainInsert:         {"job-crash-before-commit"},
	canary.MigrateUnlocked:     {"schema-race"},
	canary.NoReconnect:         {"broker-restart"},
	canary.AutoAck:             {"worker-crash-before-claim"},
	canary.NoDedup:             {"parking-replay"},
	canary.RecentOnly:          {"pending-before-relay"},
	canary.TrustFirstAnswer:    {"late-landing", "late-landing-no-resend", "report-disagrees"},
	canary.ParkWithoutReason:   {"poison-messages"},
	canary.NoAttemptsAlert:     {"relay-crash-after-attempt-alert"},
	canary.AlertAfterCommit:    {"crash-before-expiry-alert"},
	canary.ConsentFirstOnly:    {"consent-withdrawn"},
	canary.FlatBackoff:         {"backoff-schedule"},
	canary.AllOrNothing:        {"unroutable-mid-batch"},
	canary.AckFailedRelease:    {"release-response-lost"},
	canary.NewestFirst:         {"backlog-oldest-first"},
	canary.AlertFirstStranded:  {"stranded-in-one-sweep"},
	canary.SharedReturns:       {"unroutable-behind-nack"},
	canary.RequeueOnDBFailure:  {"db-outage-before-second-copy"},
	canary.AlertBeforePark:     {"park-refused-then-sent"},
	canary.ParkUnrecorded:      {"parked-then-second-copy"},
	canary.ExpireTaken:         {"ad-confirmed-before-cutoff"},
	canary.DoubleEnqueue:       {"business-events-once"},
	canary.AlertOnRetry:        {"rejected-then-sent"},
	canary.ConsentAtRelayOnly:  {"consent-withdrawn"},
	canary.AdHoursUTC:          {"ad-send-cutoff"},
}

// CanaryResult is the sweep's answer for one canary.
type CanaryResult struct {
	Bug       string
	CaughtBy  []string // scenarios that went red
	NotJudged []string // scenarios whose run was not judged (ERROR)
	Runs      []scenarios.Result
}

// Caught reports whether at least one scenario went red.
func (c CanaryResult) Caught() bool { return len(c.CaughtBy) > 0 }

// Outcome is the canary's answer: PASS when caught, ERROR when no catcher
// went red but one was not judged (it proves nothing either way), FAIL when
// every catcher ran, was judged and stayed green: the canary survived.
func (c CanaryResult) Outcome() scenarios.Outcome {
	switch {
	case c.Caught():
		return scenarios.OutcomePass
	case len(c.NotJudged) > 0:
		return scenarios.OutcomeError
	default:
		return scenarios.OutcomeFail
	}
}

// Sweep runs each canary's catchers once each with the canary enabled in
// every pod. Every catcher forces the window its canary breaks (a held lock,
// a kill-point, a clock step, a count reached), so one run decides: a green
// catcher is never run again in the hope of a red one.
// progress, if set, is told about each run.
func Sweep(ctx context.Context, o scenarios.Options, bugs []string, progress func(CanaryResult, scenarios.Result)) []CanaryResult {
	if len(bugs) == 0 {
		bugs = canary.Names
	}
	var out []CanaryResult
	for _, bug := range bugs {
		out = append(out, sweep(ctx, o, bug, false, progress))
	}
	return out
}

// Catch runs the canary bug's catchers in turn until one goes red: the
// chaos suite's question, whether it is caught at all, answered by the
// first red run where Sweep runs every catcher to name each. A catcher
// whose run was not judged proves nothing, and the next one runs.
func Catch(ctx context.Context, o scenarios.Options, bug string) CanaryResult {
	return sweep(ctx, o, bug, true, nil)
}

func sweep(ctx context.Context, o scenarios.Options, bug string, first bool, progress func(CanaryResult, scenarios.Result)) CanaryResult {
	cr := CanaryResult{Bug: bug}
	for _, name := range Catchers[bug] {
		s, ok := catalogue.Lookup(name)
		if !ok {
			continue
		}
		ob := o
		ob.Bug = bug
		r := scenarios.Run(ctx, s, ob)
		cr.Runs = append(cr.Runs, r)
		if progress != nil {
			progress(cr, r)
		}
		// A run the harness could not judge (set-up, clean-up,
		// interrupt) proves nothing about the canary.
		switch r.Outcome() {
		case scenarios.OutcomeFail:
			cr.CaughtBy = append(cr.CaughtBy, name)
			if first {
				return cr
			}
		case scenarios.OutcomeError:
			cr.NotJudged = append(cr.NotJudged, name)
		}
	}
	return cr
}
