package sim

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/outboxchaos/outboxchaos/checker"
	"github.com/outboxchaos/outboxchaos/history"
)

// Figures are a day's headline numbers.
type Figures struct {
	Enqueued, Sent, Skipped, Errors, Expired, Failed, Parked int
	Alerts                                                   int
	AdEnqueued, AdBeforeCutoff                               int
	P50, P90, P99, Max                                       time.Duration // enqueue → handset
	VendorCalls                                              int
	// ExpiredDelivered are EXPIRED outbox rows whose message did reach a
	// phone: an alert announcing a loss that did not happen.
	ExpiredDelivered int
	// ErrorDelivered are ERROR inbox rows whose message did reach a phone
	// (the checker's count): the vendor took it, but the worker could not
	// know, so it wrote ERROR and alerted.
	ErrorDelivered int
	// ParkedOnRecord are parked messages whose inbox row is FAILED too.
	ParkedOnRecord int
	// Outbox and Inbox are the final rows by status.
	Outbox, Inbox map[string]int
}

// MarshalJSON writes the latencies as duration text, not nanoseconds.
func (f Figures) MarshalJSON() ([]byte, error) {
	type counts Figures
	return json.Marshal(struct {
		counts
		P50, P90, P99, Max string
	}{counts(f), durText(f.P50), durText(f.P90), durText(f.P99), durText(f.Max)})
}

// Figures computes the headline numbers from the final state.
func (r *Result) Figures() Figures {
	f := r.Final
	fig := Figures{
		Sent: f.Inbox[history.InboxSent], Errors: f.Inbox[history.InboxError], Failed: f.Inbox[history.InboxFailed],
		Expired: f.Outbox[history.OutboxExpired], Skipped: f.Outbox[history.OutboxSkipped], Parked: f.Parking,
		Alerts: f.Alerts, VendorCalls: f.VendorCalls, ErrorDelivered: r.Verdict.ErrorDelivered, ParkedOnRecord: r.ParkedOnRecord,
		Outbox: f.Outbox, Inbox: f.Inbox,
	}
	for _, n := range f.Outbox {
		fig.Enqueued += n
	}
	cut := r.Day.at("20:50")
	var lats []time.Duration
	for _, d := range r.Latencies {
		lats = append(lats, d.Latency())
		if d.Advertising && d.Handset.Before(cut) {
			fig.AdBeforeCutoff++
		}
		if d.Status == history.OutboxExpired {
			fig.ExpiredDelivered++
		}
	}
	fig.AdEnqueued = r.AdEnqueued
	if len(lats) > 0 {
		sort.Slice(lats, func(i, j int) bool { return lats[i] < lats[j] })
		q := func(p float64) time.Duration { return lats[min(len(lats)-1, int(p*float64(len(lats))))] }
		fig.P50, fig.P90, fig.P99, fig.Max = q(0.5), q(0.9), q(0.99), lats[len(lats)-1]
	}
	return fig
}

// Summary is the end-of-run text for the terminal.
func (r *Result) Summary() string {
	f := r.Figures()
	var b strings.Builder
	fmt.Fprintf(&b, "day %s, seed %d, rate %g: %s wall, %s of idle virtual time skipped in %d jumps\n",
		r.Day.Name, r.Seed, r.Rate, r.Wall.Round(time.Second), r.Skipped.Round(time.Minute), r.Jumps)
	fmt.Fprintf(&b, "  outbox %d rows: sent %d, skipped %d, ERROR %d, FAILED %d, EXPIRED %d, parked %d; %d alerts; %d vendor calls\n",
		f.Enqueued, f.Sent, f.Skipped, f.Errors, f.Failed, f.Expired, f.Parked, f.Alerts, f.VendorCalls)
	fmt.Fprintf(&b, "  checker: %d delivered once = %d SENT + %d ERROR rows that had reached a phone + %d EXPIRED that had\n",
		r.Verdict.DeliveredOnce, f.Sent, f.ErrorDelivered, f.ExpiredDelivered)
	fmt.Fprintf(&b, "  advertising: %d enqueued, %d on a phone before 20:50\n", f.AdEnqueued, f.AdBeforeCutoff)
	if f.ExpiredDelivered > 0 {
		fmt.Fprintf(&b, "  %d EXPIRED rows (each alerted as lost) had reached a phone\n", f.ExpiredDelivered)
	}
	fmt.Fprintf(&b, "  false alarms: %d (loss alerts naming a message that reached a phone)\n", FalseAlarms(r.Verdict))
	fmt.Fprintf(&b, "  enqueue → handset: p50 %s, p90 %s, p99 %s, max %s\n", round(f.P50), round(f.P90), round(f.P99), round(f.Max))
	fmt.Fprintf(&b, "  verdict: %s\n", r.Verdict)
	if r.ContractErr != nil {
		fmt.Fprintf(&b, "  checker: %v\n", r.ContractErr)
	}
	valid := "VALID"
	if !r.Lag.Valid {
		valid = "NOT VALID"
	}
	fmt.Fprintf(&b, "  compression: %s — %s\n", valid, r.Lag.Why)
	return b.String()
}

func round(d time.Duration) time.Duration {
	switch {
	case d >= time.Hour:
		return d.Round(time.Minute)
	case d >= time.Minute:
		return d.Round(time.Second)
	}
	return d.Round(10 * time.Millisecond)
}

// Term is one named figure of an identity.
type Term struct {
	Name string
	N    int
	Sub  bool // subtracted
}

// Identity is a figure and the figures it is made of: Total = the Terms,
// added or subtracted. The report prints each so a reader can check them.
type Identity struct {
	Total Term
	Terms []Term
	Why   string
}

// Holds reports whether the terms add up to the total.
func (id Identity) Holds() bool {
	n := 0
	for _, t := range id.Terms {
		if t.Sub {
			n -= t.N
		} else {
			n += t.N
		}
	}
	return n == id.Total.N
}

// Identities are how the day's figures add up: the outbox rows by status,
// the checker's partition of the intents, and how the inbox's SENT and
// ERROR rows and the alerts relate to what reached a phone. Every figure
// is read at the same moment, the end of the run (after the next
// morning's relay runs), so no two come from different windows.
func (r *Result) Identities() []Identity {
	f, v := r.Figures(), r.Verdict
	var ids []Identity

	out := Identity{Total: Term{Name: "outbox rows", N: f.Enqueued}, Why: "every notification enqueued is one outbox row, in one status"}
	for _, st := range sortedKeys(f.Outbox) {
		out.Terms = append(out.Terms, Term{Name: "outbox " + st, N: f.Outbox[st]})
	}
	ids = append(ids, out)

	ids = append(ids, Identity{Total: Term{Name: "intents", N: v.Intents}, Terms: []Term{
		{Name: "delivered once", N: v.DeliveredOnce}, {Name: "duplicated", N: v.Duplicated},
		{Name: "lost visibly", N: v.LostVisibly}, {Name: "lost silently", N: v.LostSilently},
		{Name: "skipped", N: v.Skipped}, {Name: "deferred", N: v.Deferred}, {Name: "stuck", N: v.Stuck},
	}, Why: "the checker puts each intended message in one class, by what reached a phone (the vendor's handset ledger), not by what the pipeline wrote"})

	ids = append(ids, Identity{Total: Term{Name: "delivered once", N: v.DeliveredOnce}, Terms: []Term{
		{Name: "inbox SENT", N: f.Sent}, {Name: "ERROR rows that reached a phone", N: f.ErrorDelivered},
		{Name: "EXPIRED rows that reached a phone", N: f.ExpiredDelivered},
	}, Why: "an ERROR row is a send whose outcome the worker could not know (a vendor timeout, a 5xx, a killed worker): some of those messages had in fact arrived, and the checker, which reads the phone, counts them delivered"})

	ids = append(ids, Identity{Total: Term{Name: "lost visibly", N: v.LostVisibly}, Terms: []Term{
		{Name: "inbox ERROR", N: f.Errors}, {Name: "ERROR rows that reached a phone", N: f.ErrorDelivered, Sub: true},
		{Name: "inbox FAILED", N: f.Failed}, {Name: "outbox EXPIRED", N: f.Expired},
		{Name: "EXPIRED rows that reached a phone", N: f.ExpiredDelivered, Sub: true}, {Name: "parked", N: f.Parked},
		{Name: "parked and on record as inbox FAILED (counted twice above)", N: f.ParkedOnRecord, Sub: true},
	}, Why: "a message is lost visibly when it never reached a phone and an alert names it; a park after the vendor's refusals or at the delivery limit is also an inbox FAILED row"})

	alerts := Identity{Total: Term{Name: "alerts", N: f.Alerts}, Why: "one alert per ERROR, FAILED, EXPIRED or parked message: an alert for an outcome nobody knows is also sent for the messages that did arrive"}
	alerts.Terms = []Term{{Name: "lost visibly", N: v.LostVisibly}, {Name: "ERROR rows that reached a phone", N: f.ErrorDelivered},
		{Name: "EXPIRED rows that reached a phone", N: f.ExpiredDelivered}}
	loss := v.LostVisibly + f.ErrorDelivered + f.ExpiredDelivered
	if other := f.Alerts - loss; other != 0 {
		alerts.Terms = append(alerts.Terms, Term{Name: "alerts that announce no loss (" + kindsText(r.Final.AlertKinds) + ")", N: other})
	}
	ids = append(ids, alerts)
	return ids
}

func sortedKeys(m map[string]int) []string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

func kindsText(m map[string]int) string {
	var parts []string
	for _, k := range sortedKeys(m) {
		parts = append(parts, fmt.Sprintf("%s %d", k, m[k]))
	}
	return strings.Join(parts, ", ")
}

// FalseAlarms counts the loss alerts that named a message which reached a
// phone: the true-alerts invariant's violations (0 when it could not
// judge the day).
func FalseAlarms(v checker.Verdict) int {
	for _, r := range v.Invariants {
		if r.Name == "true-alerts" {
			return r.Violations
		}
	}
	return 0
}
