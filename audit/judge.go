package audit

import (
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/outboxchaos/outboxchaos/auditor"
	"github.com/outboxchaos/outboxchaos/checker"
)

// What the audit looks for, as the issue of an operator names it: each
// judged invariant belongs to one.
const (
	CatTwice      = "delivered twice"
	CatLost       = "lost silently"
	CatFalseAlarm = "false alarm"
	CatStuck      = "stuck"
	CatHours      = "outside the kind's hours"
	CatNoOutbox   = "sent without an outbox row"
	CatAlerts     = "alert contract"
)

// ErrorsSettled is the audit's own invariant, beside the checker's: an
// inbox ERROR row (the vendor's answer unknown) is settled, by the
// reconciler or an operator, within the grace. At the end of a run the
// checker counts such a row a visible loss; in production it is a
// message nobody knows the fate of.
const ErrorsSettled = "errors-settled"

// use is how the audit feeds one checker invariant: the category its
// violations belong to, and why it cannot judge (nil or "": it can).
type use struct {
	category string
	needs    func(sn Snapshot) string
}

// always is a reason that holds for every audit.
func always(why string) func(Snapshot) string { return func(Snapshot) string { return why } }

// needsAlerts: without an alert log a loss cannot be told silent from
// visible, nor an alert false.
func needsAlerts(sn Snapshot) string {
	if sn.data.HasAlerts {
		return ""
	}
	return "no alert log (--alerts FILE): the pipeline posts its alerts to a webhook and keeps none in the database"
}

// noHistory is why an invariant read from the pods' history is not
// judged.
func noHistory(what string) func(Snapshot) string {
	return always("needs " + what + " from the pods' history, which the tables do not keep")
}

// uses maps each checker invariant the audit knows to how it feeds it; an
// invariant missing here is not judged (TestAuditKnowsEveryInvariant
// keeps the map complete).
var uses = map[string]use{
	"nothing-unexpected":    {CatNoOutbox, nil},
	"nothing-twice":         {CatTwice, nil},
	"nothing-lost-silently": {CatLost, needsAlerts},
	"nothing-stuck":         {CatStuck, nil},
	"settled":               {"", always("a live database has no end of run: nothing-stuck and " + ErrorsSettled + " judge each message against its lease, timeout or grace")},
	"settlements-agree":     {CatFalseAlarm, nil},
	"alert-contract":        {CatAlerts, needsAlerts},
	"backoff":               {"", noHistory("the relay's failed publishes")},
	"republish-bound":       {"", noHistory("the publishes, deliveries and lease reclaims")},
	"claim-order":           {"", noHistory("the relays' claims")},
	"right-intents":         {"", always("needs the business rows that owe each notification (the auditor's input); the audit reads the outbox, the inbox and the report")},
	"right-time":            {CatHours, nil},
	"right-person":          {"", always("needs when each member withdrew consent and when each sent copy passed its pre-check (the pods' history)")},
	"true-alerts":           {CatFalseAlarm, needsAlerts},
	"statuses-agree":        {CatFalseAlarm, nil},
}

// Known reports whether the audit feeds the checker invariant called name
// (judged or with a reason why not).
func Known(name string) bool { _, ok := uses[name]; return ok }

// Message is one message a violation names, with everything the audit
// holds on it.
type Message struct {
	MessageID string        `json:"message_id"`
	Outbox    *OutboxRecord `json:"outbox,omitempty"`
	Inbox     []InboxRecord `json:"inbox,omitempty"`
	Report    []ReportLine  `json:"report,omitempty"`
}

// Finding is one violation: the checker's detail and the messages it
// names.
type Finding struct {
	Detail   string    `json:"detail"`
	Messages []Message `json:"messages,omitempty"`
}

// Verdict is one invariant's result in an audit.
type Verdict struct {
	Name     string    `json:"name"`
	Doc      string    `json:"doc"`
	Category string    `json:"category,omitempty"`
	Valid    bool      `json:"valid"`
	Findings []Finding `json:"findings,omitempty"`
	// NotJudged says why the audit could not judge the invariant.
	NotJudged string `json:"not_judged,omitempty"`
}

// Result is a whole audit: what was read, each invariant's verdict, and
// how many messages met each fate.
type Result struct {
	Schema     string               `json:"schema,omitempty"`
	From       time.Time            `json:"from,omitzero"`
	To         time.Time            `json:"to,omitzero"`
	Now        time.Time            `json:"snapshot,omitzero"`
	Outbox     int                  `json:"outbox_rows"`
	Inbox      int                  `json:"inbox_rows"`
	Report     int                  `json:"report_lines"`
	OutOfRange int                  `json:"report_lines_out_of_range,omitempty"`
	Alerts     int                  `json:"alerts"`
	HasAlerts  bool                 `json:"alert_log"`
	InFlight   map[string]string    `json:"in_flight,omitempty"`
	Fates      map[checker.Fate]int `json:"fates"`
	Invariants []Verdict            `json:"invariants"`
}

// OK reports whether every judged invariant holds.
func (r Result) OK() bool { return len(r.Broken()) == 0 }

// Broken names the invariants that do not hold.
func (r Result) Broken() []string {
	var out []string
	for _, v := range r.Invariants {
		if !v.Valid {
			out = append(out, v.Name)
		}
	}
	return out
}

// Verdict returns the verdict of the invariant called name.
func (r Result) Verdict(name string) (Verdict, bool) {
	i := slices.IndexFunc(r.Invariants, func(v Verdict) bool { return v.Name == name })
	if i < 0 {
		return Verdict{}, false
	}
	return r.Invariants[i], true
}

// Judge runs the checker's invariants on the snapshot, in the checker's
// order, each one the audit can feed (uses), then ErrorsSettled. The
// invariants see the design's advertising hours (set.Hours) as the
// harness's record would give them; nothing else of the harness.
func Judge(sn Snapshot, set Settings) Result {
	tally := checker.NewTally(sn.State)
	in := checker.Input{State: sn.State, Tally: tally}
	in.State.Harness = &auditor.Record{Production: true, Hours: set.Hours}
	r := Result{Outbox: len(sn.data.Outbox), Inbox: len(sn.data.Inbox), Report: len(sn.data.Report), OutOfRange: sn.data.OutOfRange,
		Alerts: len(sn.data.Alerts), HasAlerts: sn.data.HasAlerts, Now: sn.data.Now, InFlight: sn.InFlight, Fates: map[checker.Fate]int{}}
	for _, f := range tally.Intents {
		r.Fates[f.Fate]++
	}
	for _, inv := range checker.Invariants {
		v := Verdict{Name: inv.Name, Doc: inv.Doc, Valid: true}
		u, ok := uses[inv.Name]
		switch {
		case !ok:
			v.NotJudged = "the audit does not feed this invariant yet"
		case u.needs != nil && u.needs(sn) != "":
			v.NotJudged = u.needs(sn)
		default:
			v.Category = u.category
			v.Findings = sn.findings(inv.Check(in))
			v.Valid = len(v.Findings) == 0
		}
		r.Invariants = append(r.Invariants, v)
	}
	es := Verdict{Name: ErrorsSettled, Category: CatStuck, Doc: "every inbox ERROR row (the vendor's answer unknown) is settled within the grace",
		Findings: sn.findings(sn.Unsettled)}
	es.Valid = len(es.Findings) == 0
	r.Invariants = append(r.Invariants, es)
	return r
}

// mentions finds the message ids and refkeys a detail names.
var mentions = regexp.MustCompile(`notification-outbox-\d+|refkey "[^"]*"`)

// findings attaches to each detail the messages it names: by the
// design's message_id form, a quoted refkey, or any word that is a
// message_id of the inbox or a refkey of the report.
func (sn Snapshot) findings(details []string) []Finding {
	out := make([]Finding, 0, len(details))
	for _, d := range details {
		f := Finding{Detail: d}
		var mids []string
		for _, m := range mentions.FindAllString(d, -1) {
			mids = append(mids, strings.TrimSuffix(strings.TrimPrefix(m, `refkey "`), `"`))
		}
		for _, w := range strings.FieldsFunc(d, func(r rune) bool { return strings.ContainsRune(" ()[],;", r) }) {
			if _, ok := sn.inbox[w]; ok {
				mids = append(mids, w)
			} else if _, ok := sn.lines[w]; ok {
				mids = append(mids, w)
			}
		}
		seen := map[string]bool{}
		for _, mid := range mids {
			if !seen[mid] {
				seen[mid] = true
				f.Messages = append(f.Messages, sn.message(mid))
			}
		}
		out = append(out, f)
	}
	return out
}

// message gathers what the audit holds on message mid: its outbox row,
// every inbox row of that row or id, every report line that counts for
// either.
func (sn Snapshot) message(mid string) Message {
	m := Message{MessageID: mid}
	var id int64
	if isOutboxMID(sn.outbox, mid) {
		id = outboxIDOf(mid)
	}
	for _, i := range sn.inbox[mid] {
		if id == 0 {
			id = sn.data.Inbox[i].OutboxID
		}
	}
	if i, ok := sn.outbox[id]; ok {
		r := sn.data.Outbox[i]
		m.Outbox = &r
	}
	seenRow, seenLine := map[int64]bool{}, map[int]bool{}
	mids := []string{mid}
	if id != 0 {
		mids = append(mids, checker.MessageID(id))
	}
	for _, i := range append(append([]int(nil), sn.inbox[mid]...), sn.byOutbox[id]...) {
		r := sn.data.Inbox[i]
		if !seenRow[r.ID] {
			seenRow[r.ID] = true
			m.Inbox = append(m.Inbox, r)
			mids = append(mids, r.MessageID)
		}
	}
	for _, k := range mids {
		for _, i := range sn.lines[k] {
			l := sn.data.Report[i]
			if !seenLine[l.Line] {
				seenLine[l.Line] = true
				m.Report = append(m.Report, l)
			}
		}
	}
	slices.SortFunc(m.Report, func(a, b ReportLine) int { return a.Line - b.Line })
	return m
}

// outboxID is the outbox id of a message_id of the design's form (0 if it
// is not one).
func outboxID(mid string) int64 {
	var id int64
	for _, c := range strings.TrimPrefix(mid, "notification-outbox-") {
		if c < '0' || c > '9' {
			return 0
		}
		id = id*10 + int64(c-'0')
	}
	return id
}
