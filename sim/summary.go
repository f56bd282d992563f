package sim

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"time"
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
		Sent: f.Inbox["SENT"], Errors: f.Inbox["ERROR"], Failed: f.Inbox["FAILED"],
		Expired: f.Outbox["EXPIRED"], Skipped: f.Outbox["SKIPPED"], Parked: f.Parking,
		Alerts: f.Alerts, VendorCalls: f.VendorCalls,
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
		if d.Status == "EXPIRED" {
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
	fmt.Fprintf(&b, "  advertising: %d enqueued, %d on a phone before 20:50\n", f.AdEnqueued, f.AdBeforeCutoff)
	if f.ExpiredDelivered > 0 {
		fmt.Fprintf(&b, "  %d EXPIRED rows (each alerted as lost) had reached a phone\n", f.ExpiredDelivered)
	}
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
