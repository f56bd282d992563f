package bench

import (
	"fmt"
	"sort"
	"strings"
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
	Rounds  int    // interleaved rounds merged into this result (0 or 1: one)
	// Breakdown is where the busy time went, per Unit ("batch" or
	// "message"), when the measurement traced it.
	Breakdown []Phase
	Unit      string
	// CPU is the processor time spent during the timed part, by group
	// (CPUOK: measured; /proc was readable).
	CPU   CPU
	CPUOK bool
	// Statements is what the pipeline's statements cost the database
	// during the timed part, by phase (pg_stat_statements; nil when it is
	// not loaded).
	Statements []StmtCost

	counted int // the rate's numerator (Msgs, or Msgs−1 for span rates)
	lat     *Latencies
	ph      *Phases
	units   int
	busy    time.Duration
	rest    string
}

// finish sets the rate's numerator counted (also the shown message count),
// the timed span and the latencies (nil: no latency column).
func (r *Result) finish(counted int, elapsed time.Duration, lat *Latencies) {
	r.counted, r.Msgs, r.Elapsed, r.lat = counted, counted, elapsed, lat
	r.recompute()
}

// trace sets the time breakdown: ph over units (batches or messages) of
// busy time, the remainder named rest.
func (r *Result) trace(ph *Phases, unit string, units int, busy time.Duration, rest string) {
	r.ph, r.Unit, r.units, r.busy, r.rest = ph, unit, units, busy, rest
	r.recompute()
}

func (r *Result) recompute() {
	r.Rate = 0
	if r.Elapsed > 0 {
		r.Rate = float64(r.counted) / r.Elapsed.Seconds()
	}
	if r.lat != nil && r.lat.Count() > 0 {
		r.P50, r.P99 = r.lat.Percentile(0.50), r.lat.Percentile(0.99)
	}
	if r.ph != nil {
		r.Breakdown = r.ph.Breakdown(r.units, r.busy, r.rest)
	}
}

// mergeRounds combines the interleaved rounds of one measurement: messages
// and time add up (rate = all messages / all time), latencies and phases
// pool. A failed round fails the whole.
func mergeRounds(rounds []Result) Result {
	if len(rounds) == 0 {
		return Result{}
	}
	m := rounds[0]
	m.Msgs, m.counted, m.Elapsed, m.units, m.busy = 0, 0, 0, 0, 0
	m.lat, m.ph, m.Rounds = &Latencies{}, &Phases{}, len(rounds)
	m.CPU, m.CPUOK = CPU{}, true
	var notes []string
	var stmts [][]StmtCost
	for i, r := range rounds {
		stmts = append(stmts, r.Statements)
		if r.Err != "" && m.Err == "" {
			m.Err = fmt.Sprintf("round %d: %s", i+1, r.Err)
		}
		m.Msgs += r.Msgs
		m.counted += r.counted
		m.Elapsed += r.Elapsed
		m.units += r.units
		m.busy += r.busy
		m.CPU, m.CPUOK = m.CPU.add(r.CPU), m.CPUOK && r.CPUOK
		if r.lat != nil {
			r.lat.mu.Lock()
			m.lat.samples = append(m.lat.samples, r.lat.samples...)
			r.lat.mu.Unlock()
		}
		if r.ph != nil {
			r.ph.mu.Lock()
			for k, d := range r.ph.total {
				m.ph.add(k, d, r.ph.count[k])
			}
			r.ph.mu.Unlock()
		}
		if r.Err == "" && r.Elapsed > 0 {
			notes = append(notes, fmt.Sprintf("%.0f", r.Rate))
		}
	}
	m.Statements = mergeStmts(stmts)
	if m.Err != "" {
		return m
	}
	if len(rounds) > 1 {
		m.Note = fmt.Sprintf("%d interleaved rounds (msgs/s %s)", len(rounds), strings.Join(notes, ", "))
		if last := rounds[len(rounds)-1].Note; last != "" {
			m.Note += "; last round: " + last
		}
	}
	if rounds[0].ph == nil {
		m.ph = nil
	}
	m.recompute()
	return m
}
