package sim

import (
	"fmt"
	"os"
	"sort"
	"time"

	"github.com/outboxchaos/outboxchaos/history"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
)

// Chart is one PNG the report links, with its caption.
type Chart struct {
	File, Title, Caption string
}

// The charts' time axis is the hour of the simulated day (9.5 = 09:30);
// they show the business day, 07:55 to 21:05.
const chartFrom, chartUntil = 7.9, 21.1

func hourOf(day, t time.Time) float64 { return t.Sub(day).Hours() }

func newDayPlot(title, ylabel string) *plot.Plot {
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = "virtual time of day (Asia/Seoul)"
	p.Y.Label.Text = ylabel
	p.X.Min, p.X.Max = chartFrom, chartUntil
	var ticks []plot.Tick
	for h := 8; h <= 21; h++ {
		label := ""
		if h%2 == 0 {
			label = fmt.Sprintf("%02d:00", h)
		}
		ticks = append(ticks, plot.Tick{Value: float64(h), Label: label})
	}
	p.X.Tick.Marker = plot.ConstantTicks(ticks)
	p.Y.Min = 0
	p.Y.Tick.Marker = countTicks{}
	p.Add(plotter.NewGrid())
	return p
}

// series turns samples of the business day into a line's points.
func series(r *Result, value func(Sample) float64) plotter.XYs {
	day, _ := r.Day.date()
	var xys plotter.XYs
	for _, s := range r.Samples {
		h := hourOf(day, s.At)
		if h < chartFrom || h > chartUntil {
			continue
		}
		xys = append(xys, plotter.XY{X: h, Y: value(s)})
	}
	return xys
}

// WriteCharts draws the day's charts into dir and returns them.
func WriteCharts(r *Result, dir string) ([]Chart, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("chart folder: %w", err)
	}
	var out []Chart
	day, _ := r.Day.date()
	marks := faultMarks(r)
	addPlain := func(p *plot.Plot, file, title, caption string) error {
		if err := save(p, dir, file); err != nil {
			return err
		}
		out = append(out, Chart{File: file, Title: title, Caption: caption})
		return nil
	}
	// add marks the faults on p's time axis, then draws it.
	add := func(p *plot.Plot, file, title, caption string) error {
		atLeastOne(p)
		if err := markFaults(p, marks, func(t time.Time) float64 { return hourOf(day, t) }); err != nil {
			return err
		}
		return addPlain(p, file, title, caption+faultCaption(marks))
	}
	st := func(m func(Sample) map[string]int, k string) func(Sample) float64 {
		return func(s Sample) float64 { return float64(m(s)[k]) }
	}
	ob := func(s Sample) map[string]int { return s.Outbox }
	ib := func(s Sample) map[string]int { return s.Inbox }

	p := newDayPlot("Outbox rows by status", "rows")
	if err := plotutil.AddLines(p, history.OutboxPending, series(r, st(ob, history.OutboxPending)), history.OutboxPublishing, series(r, st(ob, history.OutboxPublishing)),
		history.OutboxPublished, series(r, st(ob, history.OutboxPublished)), history.OutboxSkipped, series(r, st(ob, history.OutboxSkipped)), history.OutboxExpired, series(r, st(ob, history.OutboxExpired))); err != nil {
		return nil, err
	}
	if err := add(p, "outbox.png", "Outbox states", "Rows of notification_outbox by status, sampled every virtual minute. Each job's rows appear as PENDING at its hour and turn PUBLISHED in steps of one relay batch per 5-minute cron run; advertising rows still PENDING after 20:40 wait for the next morning."); err != nil {
		return nil, err
	}

	p = newDayPlot("Inbox rows by status", "rows")
	if err := plotutil.AddLines(p, history.InboxSent, series(r, st(ib, history.InboxSent))); err != nil {
		return nil, err
	}
	if err := add(p, "inbox.png", "Inbox: sent", "Rows of notification_histories that reached SENT: the worker's progress through the day, one relay batch at a time."); err != nil {
		return nil, err
	}
	p = newDayPlot("Inbox rows not sent", "rows")
	if err := plotutil.AddLines(p, history.InboxError, series(r, st(ib, history.InboxError)), history.InboxFailed, series(r, st(ib, history.InboxFailed)),
		history.InboxSending, series(r, st(ib, history.InboxSending))); err != nil {
		return nil, err
	}
	if err := add(p, "inbox-trouble.png", "Inbox: ERROR, FAILED, SENDING", "The inbox rows that did not reach SENT, on their own scale: ERROR rows are vendor outcomes nobody can know (timeouts, 5xx) and sends a killed worker left behind (cleanup turns a SENDING row older than 10 minutes into ERROR), each with an alert; FAILED are definitely-not-sent outcomes."); err != nil {
		return nil, err
	}

	p = newDayPlot("Queue depths (peak per virtual minute)", "ready messages")
	if err := plotutil.AddLines(p, "main", series(r, func(s Sample) float64 { return float64(s.Main) }),
		"retry", series(r, func(s Sample) float64 { return float64(s.Retry) }),
		"parking", series(r, func(s Sample) float64 { return float64(s.Parking) })); err != nil {
		return nil, err
	}
	if err := add(p, "queues.png", "Queue depths", "The most ready messages seen in the main and retry queues in each virtual minute (looked at every 20 real ms), and the parking queue. A relay batch lands in the main queue at once and drains at the worker's pace; the retry queue holds messages the vendor throttled (429) for their 10-minute TTL."); err != nil {
		return nil, err
	}

	p = newDayPlot("Vendor send requests per minute", "requests / virtual minute")
	if err := plotutil.AddLines(p, "sends", perMinute(r)); err != nil {
		return nil, err
	}
	if err := add(p, "vendor.png", "Vendor calls per minute", "Send requests the vendor received per virtual minute (its own clock), retries included: the worker's throughput, capped by one call at a time."); err != nil {
		return nil, err
	}

	p = newDayPlot("Enqueue → handset latency by hour of enqueue", "minutes")
	p50, p90, p99 := latencyByHour(r)
	if err := plotutil.AddScatters(p, "p50", p50, "p90", p90, "p99", p99); err != nil {
		return nil, err
	}
	if err := add(p, "latency.png", "Enqueue → handset latency", "Percentiles of the time from the outbox insert to the handset ledger entry, for messages enqueued in each hour (virtual minutes). A job's rows wait for their turn in 50-row relay batches, so a big job's latency grows with its size."); err != nil {
		return nil, err
	}

	p = plot.New()
	p.Title.Text = "ERROR, EXPIRED and alerts per hour"
	p.Y.Label.Text = "count"
	p.X.Label.Text = "virtual hour of day (Asia/Seoul); +1d: 08:00–08:15 the next morning"
	labels, errs, exps, alerts := lossesByHour(r)
	w := vg.Points(6)
	for i, v := range []plotter.Values{errs, exps, alerts} {
		b, err := plotter.NewBarChart(v, w)
		if err != nil {
			return nil, fmt.Errorf("losses chart: %w", err)
		}
		b.Color = plotutil.Color(i)
		b.LineStyle.Width = 0
		b.Offset = vg.Length(i-1) * w
		p.Add(b)
		p.Legend.Add([]string{"ERROR rows", "EXPIRED rows", "alerts"}[i], b)
	}
	p.NominalX(labels...)
	p.Y.Min = 0
	p.Y.Tick.Marker = countTicks{}
	p.Add(plotter.NewGrid())
	atLeastOne(p)
	// Bar i is the hour labels[i]: a fault at hh:mm sits at i − ½ + mm/60.
	if err := markFaults(p, marks, func(t time.Time) float64 {
		h := int(t.Sub(day) / time.Hour)
		frac := float64(t.Sub(day)%time.Hour) / float64(time.Hour)
		for i, l := range labels {
			if l == fmt.Sprintf("%02d", h) {
				return float64(i) - 0.5 + frac
			}
		}
		return -1
	}); err != nil {
		return nil, err
	}
	if err := addPlain(p, "losses.png", "ERROR, EXPIRED and alerts per hour", "New ERROR inbox rows, new EXPIRED outbox rows and alerts sent in each virtual hour; \"+1d\" is 08:00–08:15 the day after, when the relay expires the advertising rows the 20:40 cut-off deferred."+faultCaption(marks)); err != nil {
		return nil, err
	}
	return out, nil
}

func perMinute(r *Result) plotter.XYs {
	day, _ := r.Day.date()
	counts := map[int]int{}
	for _, c := range r.Calls {
		m := int(c.Sub(day) / time.Minute)
		counts[m]++
	}
	var xys plotter.XYs
	for m := int(chartFrom * 60); m <= int(chartUntil*60); m++ {
		xys = append(xys, plotter.XY{X: float64(m) / 60, Y: float64(counts[m])})
	}
	return xys
}

func latencyByHour(r *Result) (p50, p90, p99 plotter.XYs) {
	day, _ := r.Day.date()
	by := map[int][]time.Duration{}
	for _, d := range r.Latencies {
		h := int(d.Enqueued.Sub(day) / time.Hour)
		by[h] = append(by[h], d.Latency())
	}
	var hours []int
	for h := range by {
		hours = append(hours, h)
	}
	sort.Ints(hours)
	for _, h := range hours {
		ls := by[h]
		sort.Slice(ls, func(i, j int) bool { return ls[i] < ls[j] })
		q := func(p float64) float64 { return ls[min(len(ls)-1, int(p*float64(len(ls))))].Minutes() }
		x := float64(h) + 0.5
		p50 = append(p50, plotter.XY{X: x, Y: q(0.5)})
		p90 = append(p90, plotter.XY{X: x, Y: q(0.9)})
		p99 = append(p99, plotter.XY{X: x, Y: q(0.99)})
	}
	return p50, p90, p99
}

// lossesByHour differences the samples hour by hour: the day's hours
// 08–20, then the next morning.
func lossesByHour(r *Result) (labels []string, errs, exps, alerts plotter.Values) {
	day, _ := r.Day.date()
	type acc struct{ e, x, a float64 }
	buckets := map[string]*acc{}
	var order []string
	prev := Sample{Inbox: map[string]int{}, Outbox: map[string]int{}}
	for _, s := range append(append([]Sample(nil), r.Samples...), r.Final) {
		h := int(s.At.Sub(day) / time.Hour)
		label := fmt.Sprintf("%02d", h)
		if h >= 24 {
			label = "+1d"
		}
		b, ok := buckets[label]
		if !ok {
			b = &acc{}
			buckets[label] = b
			order = append(order, label)
		}
		b.e += float64(s.Inbox[history.InboxError] - prev.Inbox[history.InboxError])
		b.x += float64(s.Outbox[history.OutboxExpired] - prev.Outbox[history.OutboxExpired])
		b.a += float64(s.Alerts - prev.Alerts)
		prev = s
	}
	for _, l := range order {
		b := buckets[l]
		labels = append(labels, l)
		errs, exps, alerts = append(errs, b.e), append(exps, b.x), append(alerts, b.a)
	}
	return labels, errs, exps, alerts
}
