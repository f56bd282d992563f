package bench

import (
	"bufio"
	"fmt"
	"math"
	"os"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// Before is what an earlier page of this benchmark measured: the page an
// older build's outboxbench wrote minutes before, on the same machine, read
// back so that this page shows the figures of both builds side by side
// (outboxbench -before).
type Before struct {
	Path   string
	Commit string
	// Rates are msgs/s and CPU µs per message, by measurement ID.
	Rates, CPU map[string]float64
	// DatabaseCPU is the database's share of CPU, µs per message, by
	// measurement ID.
	DatabaseCPU map[string]float64
	// ScheduleCPU is the CPU seconds of a random schedule on kept schemas
	// (NaN: the page did not measure it).
	ScheduleCPU float64
}

var (
	beforeCommit = regexp.MustCompile("^\\| commit \\| `([0-9a-f]+)")
	beforeRate   = regexp.MustCompile("^\\| .* `([a-z0-9.]+)` \\| ([0-9.]+) \\|")
	beforeCPU    = regexp.MustCompile("^- `([a-z0-9.]+)`: ([0-9.]+) µs \\(broker [0-9.]+, database ([0-9.]+),")
)

// ReadBefore reads the figures of the page at path, as Markdown wrote it.
func ReadBefore(path string) (*Before, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("open the earlier page: %w", err)
	}
	defer f.Close()
	b := &Before{Path: path, Rates: map[string]float64{}, CPU: map[string]float64{}, DatabaseCPU: map[string]float64{}, ScheduleCPU: math.NaN()}
	var costCols []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 1<<16), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if m := beforeCommit.FindStringSubmatch(line); m != nil {
			b.Commit = m[1]
		}
		if m := beforeRate.FindStringSubmatch(line); m != nil {
			b.Rates[m[1]], _ = strconv.ParseFloat(m[2], 64)
		}
		if m := beforeCPU.FindStringSubmatch(line); m != nil {
			b.CPU[m[1]], _ = strconv.ParseFloat(m[2], 64)
			b.DatabaseCPU[m[1]], _ = strconv.ParseFloat(m[3], 64)
		}
		cells := strings.Split(strings.Trim(line, "| "), " | ")
		switch {
		case strings.HasPrefix(line, "| runs | count |"):
			costCols = cells
		case costCols != nil && len(cells) == len(costCols) && cells[0] == keptSchemasRow:
			for i, c := range costCols {
				if c == "CPU" {
					b.ScheduleCPU, _ = strconv.ParseFloat(cells[i], 64)
				}
			}
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read the earlier page %s: %w", path, err)
	}
	if b.Commit == "" || len(b.Rates) == 0 {
		return nil, fmt.Errorf("%s is not a page outboxbench wrote: no commit or no results table", path)
	}
	return b, nil
}

// keptSchemasRow names the exploration cost row of schedules on kept
// schemas, the one whose CPU the target reads.
const keptSchemasRow = "random schedules, kept schemas"

// beforeFigures are the targets' figures computed from an earlier page.
type beforeFigures struct {
	RelayCPU, LimitCPU, RelayVsLimit, Relay, RelayDB float64
	Worker, WorkerLimit, WorkerVsLimit               float64
	ScheduleCPU                                      float64
}

func (b *Before) figures() beforeFigures {
	get := func(m map[string]float64, id string) float64 {
		if v, ok := m[id]; ok {
			return v
		}
		return math.NaN()
	}
	f := beforeFigures{RelayCPU: get(b.CPU, IDRelay), Relay: get(b.Rates, IDRelay), RelayDB: get(b.DatabaseCPU, IDRelay),
		Worker: get(b.Rates, IDWorker0), ScheduleCPU: b.ScheduleCPU}
	l := limitsOf(func(id string) float64 { return get(b.Rates, id) }, func(id string) float64 { return get(b.CPU, id) })
	f.LimitCPU, f.RelayVsLimit = l.RelayCPU, l.RelayVsLimit
	f.WorkerLimit, f.WorkerVsLimit = l.Worker, l.WorkerVsLimit
	return f
}

// scheduleCPU is this run's CPU seconds per random schedule on kept
// schemas, NaN when not measured.
func (r *Report) scheduleCPU() float64 {
	if r.Explore == nil {
		return math.NaN()
	}
	for _, row := range r.Explore.Rows {
		if row.What == keptSchemasRow && row.Runs > 0 {
			return row.Sum.CPU.Total().Seconds() / float64(row.Runs)
		}
	}
	return math.NaN()
}

// beforeSection is the page's table of the targets' figures, the earlier
// build's beside this one's ("" without -before).
func (r *Report) beforeSection() string {
	if r.Before == nil {
		return ""
	}
	was, f := r.Before.figures(), r.Figures()
	var b strings.Builder
	fmt.Fprintf(&b, "\n## Before and after\n\n")
	fmt.Fprintf(&b, "The same targets measured by the build of commit `%s` (its own `outboxbench`, with its own `outboxchaos` as the pods), run on this machine just before this page's run, one after the other. Each figure is a ratio of measurements taken in one run, so the two columns compare builds, not moments.\n\n", r.Before.Commit)
	fmt.Fprintf(&b, "| measurement | before (`%s`) | this run (`%s`) | target |\n|---|---:|---:|---|\n", r.Before.Commit, r.Commit)
	row := func(what, format string, before, now float64, target string) {
		fmt.Fprintf(&b, "| %s | %s | %s | %s |\n", what, num(before, format), num(now, format), target)
	}
	row("relay's limit ÷ the relay, by CPU per message", "%.2f", was.RelayVsLimit, f.RelayVsLimitCPU, "≥ 0.90")
	row("the relay's CPU per message, µs", "%.0f", was.RelayCPU, f.RelayCPU, "")
	row("of which the database, µs", "%.0f", was.RelayDB, r.cpuShare(IDRelay, func(c CPU) time.Duration { return c.Database }), "")
	row("its limit (raw publish + raw claim and mark), µs", "%.0f", was.LimitCPU, f.RelayLimitCPU, "")
	row("the relay's rate, msgs/s", "%.0f", was.Relay, f.Relay, "")
	row("worker (vendor 0 ms) ÷ its serial limit", "%.2f", was.WorkerVsLimit, f.WorkerVsLimit, "≥ 0.50")
	row("worker rate, msgs/s", "%.0f", was.Worker, f.Worker0, "")
	row("a random schedule on a kept schema, CPU seconds", "%.2f", was.ScheduleCPU, r.scheduleCPU(), "≤ 0.9")
	return b.String()
}
