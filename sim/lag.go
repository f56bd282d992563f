package sim

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"time"

	"github.com/outboxchaos/outboxchaos/checker"
	"github.com/outboxchaos/outboxchaos/fakevendor"
	"github.com/outboxchaos/outboxchaos/scenarios"
)

// Lag is how far compression distorted the day. Real work — a claim
// INSERT, a result UPDATE, an ack — takes the same real milliseconds at
// any rate, so on the virtual clock it costs rate times more than in
// production. The worker sends one message at a time, so that cost adds
// to every message's cycle: Added is the virtual time compression added
// per message, Share its part of the median cycle.
type Lag struct {
	Pairs          int           // back-to-back vendor calls measured
	Cycle          time.Duration // median virtual time from one send to the next
	Latency        time.Duration // median vendor latency of those sends (the plan's)
	Overhead       time.Duration // median virtual time outside the vendor call
	RealOverhead   time.Duration // the same work in real time (Overhead / rate)
	Added          time.Duration // what compression added per message
	Share          float64       // Added / Cycle
	ScheduleLagMax time.Duration // the latest a planned event or cron run fired
	Valid          bool
	Why            string
	SuggestedRate  float64 // a rate at which Share would be about 20 %
}

// Thresholds of a valid day.
const (
	maxShare       = 0.25
	maxScheduleLag = time.Minute
	busyGap        = 30 * time.Second // longer gaps between sends are idle time
)

func measureLag(calls []fakevendor.Call, p *Plan, rate float64, fired []Fired, tickLag time.Duration) Lag {
	sort.Slice(calls, func(i, j int) bool { return calls[i].N < calls[j].N })
	var cycles, lats, overs []time.Duration
	for i := 1; i < len(calls); i++ {
		a, b := calls[i-1], calls[i]
		if a.Mode != fakevendor.Accept || !a.Accepted {
			continue
		}
		lat := p.Latency(a.RefKey)
		gap := b.At.Sub(a.At)
		if gap <= 0 || gap-lat > busyGap {
			continue
		}
		cycles, lats, overs = append(cycles, gap), append(lats, lat), append(overs, max(gap-lat, 0))
	}
	l := Lag{Pairs: len(cycles), ScheduleLagMax: tickLag}
	for _, f := range fired {
		if d := f.Actual.Sub(f.At); d > l.ScheduleLagMax {
			l.ScheduleLagMax = d
		}
	}
	if len(cycles) == 0 {
		l.Valid, l.Why = l.ScheduleLagMax <= maxScheduleLag, "no back-to-back sends to measure the worker's cycle"
		return l
	}
	l.Cycle, l.Latency, l.Overhead = median(cycles), median(lats), median(overs)
	l.RealOverhead = time.Duration(float64(l.Overhead) / rate)
	l.Added = l.Overhead - l.RealOverhead
	l.Share = float64(l.Added) / float64(l.Cycle)
	o, lat := float64(l.RealOverhead), float64(l.Latency)
	if o > 0 {
		l.SuggestedRate = (0.2*lat + o) / (0.8 * o)
	}
	switch {
	case l.Share > maxShare:
		l.Why = fmt.Sprintf("compression added %s of the worker's %s cycle per message (%.0f %%, over %.0f %%): run again with --rate %.0f or less",
			l.Added.Round(time.Millisecond), l.Cycle.Round(time.Millisecond), 100*l.Share, 100*maxShare, l.SuggestedRate)
	case l.ScheduleLagMax > maxScheduleLag:
		l.Why = fmt.Sprintf("an event fired %s late (over %s): the machine could not keep up with the clock", l.ScheduleLagMax.Round(time.Second), maxScheduleLag)
	default:
		l.Valid = true
		l.Why = fmt.Sprintf("compression added %s per message (%.0f %% of the cycle); events fired at most %s late",
			l.Added.Round(time.Millisecond), 100*l.Share, l.ScheduleLagMax.Round(time.Second))
	}
	return l
}

func median(ds []time.Duration) time.Duration {
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[len(s)/2]
}

// Delivery is one message that reached a phone.
type Delivery struct {
	OutboxID    int64
	Kind        string
	Advertising bool
	Enqueued    time.Time // the outbox row's creation, virtual
	Handset     time.Time // its first ledger entry, virtual
	Status      string    // the outbox row's final status
}

// Latency is enqueue → handset.
func (d Delivery) Latency() time.Duration { return d.Handset.Sub(d.Enqueued) }

func deliveries(ctx context.Context, env *scenarios.Env) ([]Delivery, error) {
	first := map[string]time.Time{}
	for _, e := range env.Vendor().Ledger() {
		if t, ok := first[e.RefKey]; !ok || e.At.Before(t) {
			first[e.RefKey] = e.At
		}
	}
	rows, err := env.DB().Query(ctx, `SELECT id, kind, advertising, created_at, status FROM notification_outbox ORDER BY id`)
	if err != nil {
		return nil, fmt.Errorf("read deliveries: %w", err)
	}
	defer rows.Close()
	var out []Delivery
	for rows.Next() {
		var d Delivery
		if err := rows.Scan(&d.OutboxID, &d.Kind, &d.Advertising, &d.Enqueued, &d.Status); err != nil {
			return nil, fmt.Errorf("read deliveries: %w", err)
		}
		if at, ok := first[checker.MessageID(d.OutboxID)]; ok {
			d.Handset = at
			out = append(out, d)
		}
	}
	return out, rows.Err()
}

// MarshalJSON writes the durations as Go duration text ("206.616ms"), not
// bare nanoseconds, so the figure files read without a calculator.
func (l Lag) MarshalJSON() ([]byte, error) {
	return json.Marshal(struct {
		Pairs                                                         int
		Cycle, Latency, Overhead, RealOverhead, Added, ScheduleLagMax string
		Share                                                         float64
		Valid                                                         bool
		Why                                                           string
		SuggestedRate                                                 float64
	}{l.Pairs, durText(l.Cycle), durText(l.Latency), durText(l.Overhead), durText(l.RealOverhead), durText(l.Added), durText(l.ScheduleLagMax),
		l.Share, l.Valid, l.Why, l.SuggestedRate})
}

// durText is a duration as JSON text, to the microsecond.
func durText(d time.Duration) string { return d.Round(time.Microsecond).String() }
