package sim

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/outboxchaos/outboxchaos/system/notification"
)

// Capacity holds the capacity answers, each measured by simulating, each
// row repeated over several seeds so the page can show how far one run is
// from the next.
type Capacity struct {
	Ad     []AdRow
	Errors []ErrorRow
	Seeds  []int64 // the seeds each repeated row ran with
	Wall   time.Duration
}

// AdRow: how many advertising messages reach a phone before the 20:50
// cut-off when the job enqueues them at 19:55, at a vendor latency. The
// run offers more than can make it; the queue is first in, first out, so
// the count on a phone by 20:50 is the largest member count whose messages
// all go out.
type AdRow struct {
	LatencyMS float64
	BatchSize int
	Drain     bool
	Offered   int
	// BeforeCutoff is the median of Runs, the count of each seed's run.
	BeforeCutoff int
	Runs         []int
	Rate         float64
	Lag          Lag // of the median run
	// LagValid, MaxShare and LagWhy sum up compression over every run.
	LagValid bool
	MaxShare float64
	LagWhy   string
}

// Range is the smallest and largest count over the runs, or "—" for a
// single run.
func (a AdRow) Range() string {
	if len(a.Runs) < 2 {
		return "—"
	}
	lo, hi := slices.Min(a.Runs), slices.Max(a.Runs)
	return fmt.Sprintf("%d–%d", lo, hi)
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

// ErrorRun is one seed's day at a vendor timeout rate.
type ErrorRun struct {
	Seed     int64
	Messages int // sent to the vendor (intended and consenting)
	Errors   int
	Alerts   int
	Rate     float64
	Lag      Lag
}

// ErrorRow: ERROR rows and alerts at a vendor timeout rate, pooled over
// its runs.
type ErrorRow struct {
	Timeout                  float64
	Runs                     []ErrorRun
	Messages, Errors, Alerts int // summed over Runs
}

// PerTenThousand scales a pooled count to 10,000 messages.
func (e ErrorRow) PerTenThousand(n int) float64 {
	if e.Messages == 0 {
		return 0
	}
	return float64(n) * 10000 / float64(e.Messages)
}

// RunRange is the smallest and largest per-10,000 rate of one run, of the
// count pick chooses; "—" for a single run.
func (e ErrorRow) RunRange(pick func(ErrorRun) int) string {
	if len(e.Runs) < 2 {
		return "—"
	}
	var rates []float64
	for _, r := range e.Runs {
		if r.Messages > 0 {
			rates = append(rates, float64(pick(r))*10000/float64(r.Messages))
		}
	}
	if len(rates) == 0 {
		return "—"
	}
	return fmt.Sprintf("%.0f–%.0f", slices.Min(rates), slices.Max(rates))
}

// Interval is the 95 % Wilson score interval of a pooled count n over
// the row's messages, per 10,000: how far the rate could be from the one
// measured, given how few events it counts.
func (e ErrorRow) Interval(n int) (lo, hi float64) {
	if e.Messages == 0 {
		return 0, 0
	}
	const z = 1.96
	m := float64(e.Messages)
	p := float64(n) / m
	centre := (p + z*z/(2*m)) / (1 + z*z/m)
	half := z / (1 + z*z/m) * math.Sqrt(p*(1-p)/m+z*z/(4*m*m))
	return 10000 * max(centre-half, 0), 10000 * min(centre+half, 1)
}

// MarshalJSON writes the wall time as duration text, not nanoseconds.
func (c *Capacity) MarshalJSON() ([]byte, error) {
	return json.Marshal(struct {
		Ad     []AdRow
		Errors []ErrorRow
		Seeds  []int64
		Wall   string
	}{c.Ad, c.Errors, c.Seeds, c.Wall.Round(time.Second).String()})
}

// lagSummary: whether every run's compression was valid, the largest
// share it added, and why the first invalid run was not.
func lagSummary(lags []Lag) (valid bool, share float64, why string) {
	valid = true
	for _, l := range lags {
		if !l.Valid && valid {
			valid, why = false, l.Why
		}
		share = max(share, l.Share)
	}
	return valid, share, why
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

// RunCapacity answers both capacity questions by simulating: each ERROR
// row errRuns times and each draining advertising row adRuns times, with
// seeds o.Seed, o.Seed+1, …. A run that compression
// distorted is run again at the rate it suggests, once, where timing
// decides the answer. The relay-bound advertising row (50 rows per
// 5-minute run) is counted by the relay's schedule, not by timing: it runs
// once, and its compression figure is reported, not acted on.
func RunCapacity(ctx context.Context, o Options, errRuns, adRuns int, say func(string)) (*Capacity, error) {
	start := time.Now()
	errRuns, adRuns = max(errRuns, 1), max(adRuns, 1)
	c := &Capacity{}
	for i := range max(errRuns, adRuns) {
		c.Seeds = append(c.Seeds, o.Seed+int64(i))
	}
	overhead := assumedOverhead
	run := func(d Day, seed int64, timed bool) (*Result, error) {
		d.Rate = rateFor(d.Vendor.LatencyMedianMS, overhead)
		oo := o
		oo.Rate = 0
		oo.Seed = seed
		res, err := Run(ctx, d, oo)
		if err == nil && timed && !res.Lag.Valid && res.Lag.SuggestedRate > 0 && res.Lag.SuggestedRate < d.Rate {
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
	}{{150, 50, false, 800}, {500, 500, true, 7500}, {1000, 500, true, 4000}} {
		seeds := c.Seeds[:adRuns]
		if !q.drain {
			seeds = seeds[:1]
		}
		row := AdRow{LatencyMS: q.latency, BatchSize: q.batch, Drain: q.drain}
		var results []*Result
		var lags []Lag
		for _, seed := range seeds {
			say(fmt.Sprintf("advertising capacity: vendor latency %g ms, batch %d, drain %v, %d members offered, seed %d", q.latency, q.batch, q.drain, q.offered, seed))
			res, err := run(adDay(q.offered, q.latency, q.batch, q.drain), seed, q.drain)
			if err != nil {
				return c, err
			}
			f := res.Figures()
			row.Offered = f.AdEnqueued
			row.Runs = append(row.Runs, f.AdBeforeCutoff)
			results, lags = append(results, res), append(lags, res.Lag)
			say(fmt.Sprintf("  %d of %d on a phone before 20:50 (%s)", f.AdBeforeCutoff, f.AdEnqueued, res.Lag.Why))
		}
		order := make([]int, len(results))
		for i := range order {
			order[i] = i
		}
		slices.SortFunc(order, func(a, b int) int { return row.Runs[a] - row.Runs[b] })
		mid := order[len(order)/2]
		row.BeforeCutoff, row.Rate, row.Lag = row.Runs[mid], results[mid].Rate, results[mid].Lag
		row.LagValid, row.MaxShare, row.LagWhy = lagSummary(lags)
		c.Ad = append(c.Ad, row)
	}
	slices.SortStableFunc(c.Ad, func(a, b AdRow) int {
		if a.LatencyMS != b.LatencyMS {
			return cmp.Compare(a.LatencyMS, b.LatencyMS)
		}
		return cmp.Compare(a.BatchSize, b.BatchSize)
	})
	for _, t := range []float64{0.005, 0.02, 0.05} {
		row := ErrorRow{Timeout: t}
		for _, seed := range c.Seeds[:errRuns] {
			say(fmt.Sprintf("ERROR rows at a %.1f %% vendor timeout rate, seed %d", 100*t, seed))
			res, err := run(errorDay(t), seed, true)
			if err != nil {
				return c, err
			}
			f := res.Figures()
			r := ErrorRun{Seed: seed, Messages: f.Sent + f.Errors + f.Failed, Errors: f.Errors, Alerts: f.Alerts, Rate: res.Rate, Lag: res.Lag}
			row.Runs = append(row.Runs, r)
			row.Messages, row.Errors, row.Alerts = row.Messages+r.Messages, row.Errors+r.Errors, row.Alerts+r.Alerts
			say(fmt.Sprintf("  %d ERROR rows, %d alerts over %d messages", r.Errors, r.Alerts, r.Messages))
		}
		c.Errors = append(c.Errors, row)
	}
	slices.SortStableFunc(c.Errors, func(a, b ErrorRow) int { return cmp.Compare(a.Timeout, b.Timeout) })
	c.Wall = time.Since(start)
	return c, nil
}
