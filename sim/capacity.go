package sim

import (
	"context"
	"fmt"
	"time"

	"github.com/outboxchaos/outboxchaos/system/notification"
)

// Capacity holds the capacity answers, each measured by simulating.
type Capacity struct {
	Ad     []AdRow
	Errors []ErrorRow
	Wall   time.Duration
}

// AdRow: how many advertising messages reach a phone before the 20:50
// cut-off when the job enqueues them at 19:55, at a vendor latency. The
// run offers more than can make it; the queue is first in, first out, so
// the count on a phone by 20:50 is the largest member count whose messages
// all go out.
type AdRow struct {
	LatencyMS    float64
	BatchSize    int
	Drain        bool
	Offered      int
	BeforeCutoff int
	Rate         float64
	Lag          Lag
}

// Corrected is BeforeCutoff without compression's share of the worker's
// cycle, where the worker is the bottleneck (a draining relay); "—"
// otherwise.
func (a AdRow) Corrected() string {
	if !a.Drain || a.Lag.Cycle <= a.Lag.Added || a.Lag.Cycle == 0 {
		return "—"
	}
	return fmt.Sprintf("≈ %.0f", float64(a.BeforeCutoff)*float64(a.Lag.Cycle)/float64(a.Lag.Cycle-a.Lag.Added))
}

// ErrorRow: ERROR rows and alerts over a day's messages at a vendor
// timeout rate.
type ErrorRow struct {
	Timeout  float64
	Messages int // sent to the vendor (intended and consenting)
	Errors   int
	Alerts   int
	Rate     float64
	Lag      Lag
}

// PerTenThousand scales a count to 10,000 messages.
func (e ErrorRow) PerTenThousand(n int) float64 {
	if e.Messages == 0 {
		return 0
	}
	return float64(n) * 10000 / float64(e.Messages)
}

// rateFor is the rate at which compression adds about a fifth to a
// message's cycle, given the pipeline's real per-message overhead.
func rateFor(latencyMS float64, overhead time.Duration) float64 {
	o := float64(overhead) / float64(time.Millisecond)
	r := (0.2*latencyMS + o) / (0.8 * o)
	return min(max(r, 2), 200)
}

// assumedOverhead is the real per-message work of the pipeline on this
// machine kind before a run has measured it.
const assumedOverhead = 6 * time.Millisecond

// adDay is the capacity question's day: one advertising job at 19:55.
func adDay(members int, latencyMS float64, batch int, drain bool) Day {
	return Day{
		Name: fmt.Sprintf("ad-capacity-%gms", latencyMS), Date: Default().Date, Members: members, Consent: 1,
		Jobs:      []Job{{Kind: string(notification.MissionReminder), At: "19:55"}},
		Vendor:    Vendor{LatencyMedianMS: latencyMS, LatencyP99MS: 2 * latencyMS},
		BatchSize: batch, RelayDrain: drain, Workers: 1, Deploys: []string{},
	}
}

// errorDay is the ERROR-rate question's day: 2,000 grade renewals at 09:00
// through a vendor timing out at the given rate.
func errorDay(timeout float64) Day {
	return Day{
		Name: fmt.Sprintf("errors-%g", timeout), Date: Default().Date, Members: 2000, Consent: 1,
		Jobs:      []Job{{Kind: string(notification.GradeRenewal), At: "09:00"}},
		Vendor:    Vendor{LatencyMedianMS: 150, LatencyP99MS: 900, Timeout: timeout},
		BatchSize: 500, RelayDrain: true, Workers: 1, Deploys: []string{},
	}
}

// RunCapacity answers both capacity questions by simulating. A run that
// compression distorted is run again at the rate it suggests, once.
func RunCapacity(ctx context.Context, o Options, say func(string)) (*Capacity, error) {
	start := time.Now()
	c := &Capacity{}
	overhead := assumedOverhead
	run := func(d Day) (*Result, error) {
		d.Rate = rateFor(d.Vendor.LatencyMedianMS, overhead)
		oo := o
		oo.Rate = 0
		res, err := Run(ctx, d, oo)
		if err == nil && !res.Lag.Valid && res.Lag.SuggestedRate > 0 && res.Lag.SuggestedRate < d.Rate {
			say(fmt.Sprintf("  %s at rate %.0f: %s; again at rate %.0f", d.Name, d.Rate, res.Lag.Why, res.Lag.SuggestedRate))
			d.Rate = res.Lag.SuggestedRate
			res, err = Run(ctx, d, oo)
		}
		if err != nil {
			return nil, err
		}
		if res.Lag.RealOverhead > 0 {
			overhead = res.Lag.RealOverhead
		}
		if !res.Verdict.OK() || res.ContractErr != nil {
			return res, fmt.Errorf("%s broke the contract: %s", d.Name, res.Verdict)
		}
		return res, nil
	}
	for _, q := range []struct {
		latency float64
		batch   int
		drain   bool
		offered int
	}{{150, 50, false, 800}, {1000, 500, true, 4000}, {500, 500, true, 7500}} {
		say(fmt.Sprintf("advertising capacity: vendor latency %g ms, batch %d, drain %v, %d members offered", q.latency, q.batch, q.drain, q.offered))
		res, err := run(adDay(q.offered, q.latency, q.batch, q.drain))
		if err != nil {
			return c, err
		}
		f := res.Figures()
		c.Ad = append(c.Ad, AdRow{LatencyMS: q.latency, BatchSize: q.batch, Drain: q.drain, Offered: f.AdEnqueued,
			BeforeCutoff: f.AdBeforeCutoff, Rate: res.Rate, Lag: res.Lag})
		say(fmt.Sprintf("  %d of %d on a phone before 20:50 (%s)", f.AdBeforeCutoff, f.AdEnqueued, res.Lag.Why))
	}
	for _, t := range []float64{0.005, 0.02, 0.05} {
		say(fmt.Sprintf("ERROR rows at a %.1f %% vendor timeout rate", 100*t))
		res, err := run(errorDay(t))
		if err != nil {
			return c, err
		}
		f := res.Figures()
		c.Errors = append(c.Errors, ErrorRow{Timeout: t, Messages: f.Sent + f.Errors + f.Failed, Errors: f.Errors, Alerts: f.Alerts, Rate: res.Rate, Lag: res.Lag})
		say(fmt.Sprintf("  %d ERROR rows, %d alerts over %d messages", f.Errors, f.Alerts, f.Sent+f.Errors+f.Failed))
	}
	c.Wall = time.Since(start)
	return c, nil
}
