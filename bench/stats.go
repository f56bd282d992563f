package bench

import (
	"sort"
	"sync"
	"time"
)

// Latencies collects per-message latencies. A sample may stand for several
// messages (every message of one relay batch has the batch's latency), so
// percentiles are weighted by message count. It is safe for concurrent use.
type Latencies struct {
	mu      sync.Mutex
	samples []sample
}

type sample struct {
	d time.Duration
	n int
}

// Add records that n messages took d each.
func (l *Latencies) Add(d time.Duration, n int) {
	if n <= 0 {
		return
	}
	l.mu.Lock()
	l.samples = append(l.samples, sample{d, n})
	l.mu.Unlock()
}

// Count returns the number of messages recorded.
func (l *Latencies) Count() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, s := range l.samples {
		n += s.n
	}
	return n
}

// Percentile returns the latency at or below which a fraction q (0..1) of
// the recorded messages fall, or 0 when nothing was recorded.
func (l *Latencies) Percentile(q float64) time.Duration {
	l.mu.Lock()
	s := append([]sample(nil), l.samples...)
	l.mu.Unlock()
	if len(s) == 0 {
		return 0
	}
	sort.Slice(s, func(i, j int) bool { return s[i].d < s[j].d })
	total := 0
	for _, x := range s {
		total += x.n
	}
	// Rank of the q-quantile message, 1-based ("nearest rank").
	rank := int(q*float64(total) + 0.999999)
	if rank < 1 {
		rank = 1
	}
	seen := 0
	for _, x := range s {
		seen += x.n
		if seen >= rank {
			return x.d
		}
	}
	return s[len(s)-1].d
}

// Result is one measurement.
type Result struct {
	ID      string        // stable key, e.g. "relay.r1.b50"
	Group   string        // section of the table
	Name    string        // what was measured, for people
	Msgs    int           // messages (or rows) processed in the timed part
	Elapsed time.Duration // timed part
	Rate    float64       // messages per second
	P50     time.Duration // per-message latency, 0 when it does not apply
	P99     time.Duration
	Latency string // what the latency columns mean for this row
	Note    string // checks and extra figures
	Err     string // non-empty when the measurement failed
	// Breakdown is where the busy time went, per Unit ("batch" or
	// "message"), when the measurement traced it.
	Breakdown []Phase
	Unit      string
}

// finish fills Rate and the percentiles from msgs, elapsed and lat (nil:
// no latency column).
func (r *Result) finish(msgs int, elapsed time.Duration, lat *Latencies) {
	r.Msgs, r.Elapsed = msgs, elapsed
	if elapsed > 0 {
		r.Rate = float64(msgs) / elapsed.Seconds()
	}
	if lat != nil && lat.Count() > 0 {
		r.P50, r.P99 = lat.Percentile(0.50), lat.Percentile(0.99)
	}
}
