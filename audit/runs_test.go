package audit_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/outboxchaos/outboxchaos/audit"
	"github.com/outboxchaos/outboxchaos/checker"
)

// fromRun is what the audit would read at the end of a recorded run: its
// final tables, the fake vendor's ledger as the report (one line per
// delivery), the alerts the sink received, the members' consent. No
// snapshot time: nothing is in flight but what the run found deferred.
func fromRun(s checker.State) audit.Data {
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

// unseen are the violations the audit cannot find by construction, each
// with the input it does not read: the checker finds them in a run, the
// audit of the same run's tables and report does not.
var unseen = []struct{ detail, input string }{
	{"never enqueued", "the business rows that owe a notification no outbox row carries"},
	{"has no x-failure-reason", "the parking queue's headers (the audit never touches the broker)"},
}

// The audit of each recorded run's final tables, report and alerts
// (checker/testdata/runs) agrees with the run's verdict invariant by
// invariant: every invariant both judge finds the same violations, save
// those whose inputs the audit does not read (unseen). The verdict is
// the recorded one where the record lists its invariants, else the
// checker's recomputation (which TestRecordedRuns ties to the recorded
// counts).
func TestAuditAgreesWithRecordedRuns(t *testing.T) {
	t.Parallel()
	files, err := filepath.Glob(filepath.Join("..", "checker", "testdata", "runs", "*", "run.json"))
	if err != nil || len(files) < 3 {
		t.Fatalf("want recorded runs, found %d (%v)", len(files), err)
	}
	compared, broken := 0, 0
	for _, f := range files {
		name := filepath.Base(filepath.Dir(f))
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var rec checker.Record
		if err := json.Unmarshal(raw, &rec); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		set := audit.Defaults()
		set.AlertAttempt = rec.State.AlertAttempt
		if rec.State.Harness != nil {
			set.Hours = rec.State.Harness.Hours
		}
		res := audit.Judge(audit.Build(fromRun(rec.State), set), set)
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
	}
	if compared == 0 || broken == 0 {
		t.Errorf("compared %d invariants, %d broken: the agreement is untested", compared, broken)
	}
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

// seen drops from details the violations the audit cannot find (unseen).
func seen(details []string) []string {
	var out []string
	for _, d := range details {
		if !slices.ContainsFunc(unseen, func(u struct{ detail, input string }) bool { return strings.Contains(d, u.detail) }) {
			out = append(out, d)
		}
	}
	return out
}
