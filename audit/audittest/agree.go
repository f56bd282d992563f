package audittest

import (
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/outboxchaos/outboxchaos/audit"
	"github.com/outboxchaos/outboxchaos/checker"
)

// FromRun is what the audit would read at the end of a run: its final
// tables, the fake vendor's ledger as the report (one line per delivery),
// the alerts the sink received, the members' consent. No snapshot time:
// nothing is in flight but what the run found deferred.
func FromRun(s checker.State) audit.Data {
	d := audit.Data{Alerts: s.Alerts, HasAlerts: true, Consent: s.Consent}
	for _, r := range s.Outbox {
		d.Outbox = append(d.Outbox, audit.OutboxRecord{ID: r.ID, DedupKey: r.DedupKey, Kind: r.Kind, Status: r.Status, Reason: r.Reason,
			Attempts: r.Attempts, MemberID: r.MemberID, Phone: r.Phone, NextAttemptAt: r.Due, Deferred: r.Deferred})
	}
	for i, r := range s.Inbox {
		d.Inbox = append(d.Inbox, audit.InboxRecord{ID: int64(i + 1), MessageID: r.MessageID, OutboxID: r.OutboxID, DedupKey: r.DedupKey,
			Status: r.Status, Settled: r.Settled, Resends: r.Resends})
	}
	for i, e := range s.Ledger {
		d.Report = append(d.Report, audit.ReportLine{Line: i + 2, RefKey: e.RefKey, Status: audit.ReportSent, Phone: e.Phone, At: e.At})
	}
	return d
}

// Unseen are the violations the audit cannot find by construction, each
// with the input it does not read: the checker finds them in a run, the
// audit of the same run's tables and report does not.
var Unseen = []struct{ Detail, Input string }{
	{"never enqueued", "the business rows that owe a notification no outbox row carries"},
	{"has no x-failure-reason", "the parking queue's headers (the audit never touches the broker)"},
}

// Agree audits a run's final state (FromRun) and holds it to the run's
// verdict invariant by invariant: every invariant both judge must find the
// same violations (the same messages named), save those the audit cannot
// see (Unseen). verdict is the run's invariants, or nil for the checker's
// recomputation. It returns how many invariants it compared and how many
// of them were broken.
func Agree(t testing.TB, name string, rec checker.Record) (compared, broken int) {
	t.Helper()
	set := audit.Defaults()
	set.AlertAttempt = rec.State.AlertAttempt
	if rec.State.Harness != nil {
		set.Hours = rec.State.Harness.Hours
	}
	res := audit.Judge(audit.Build(FromRun(rec.State), set), set)
	verdict := rec.Verdict.Invariants
	if len(verdict) == 0 {
		verdict = checker.Judge(rec.History, rec.Faults, rec.State).Invariants
	}
	input := checker.Input{History: rec.History, Faults: rec.Faults, State: rec.State, Tally: checker.NewTally(rec.State)}
	if input.Tally.Audit != nil {
		input.State.Intents = input.Tally.Audit.Intents()
	}
	for _, v := range res.Invariants {
		i := slices.IndexFunc(verdict, func(r checker.Result) bool { return r.Name == v.Name })
		if v.NotJudged != "" || i < 0 || verdict[i].NotJudged != "" {
			continue
		}
		compared++
		inv := checker.Invariants[slices.IndexFunc(checker.Invariants, func(inv checker.Invariant) bool { return inv.Name == v.Name })]
		all := inv.Check(input)
		if verdict[i].Valid != (len(all) == 0) {
			t.Errorf("%s: %s recorded valid=%v, the checker now finds %q", name, v.Name, verdict[i].Valid, all)
		}
		var got []string
		for _, f := range v.Findings {
			got = append(got, f.Detail)
		}
		// The same violations: the same messages named, whatever the
		// words (the audit knows a parked message only by its alert).
		if want := seen(all); !slices.Equal(named(got), named(want)) || v.Valid != (len(want) == 0) {
			t.Errorf("%s: %s: the audit finds %q, the run's verdict %q", name, v.Name, got, want)
		}
		if !v.Valid {
			broken++
		}
	}
	return compared, broken
}

// messageIDs finds the message ids and refkeys a detail names.
var messageIDs = regexp.MustCompile(`notification-outbox-\d+|refkey "[^"]*"`)

// named is each detail as the messages it names (itself when it names
// none), sorted.
func named(details []string) []string {
	var out []string
	for _, d := range details {
		if ids := messageIDs.FindAllString(d, -1); len(ids) > 0 {
			d = strings.Join(ids, " ")
		}
		out = append(out, d)
	}
	slices.Sort(out)
	return out
}

// seen drops from details the violations the audit cannot find (Unseen).
func seen(details []string) []string {
	var out []string
	for _, d := range details {
		if !slices.ContainsFunc(Unseen, func(u struct{ Detail, Input string }) bool { return strings.Contains(d, u.Detail) }) {
			out = append(out, d)
		}
	}
	return out
}
