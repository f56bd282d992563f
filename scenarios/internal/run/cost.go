package run

import (
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/outboxchaos/outboxchaos/rig"
)

// Cost is what one run spent: wall time by phase and CPU time by process
// class. Waiting is the part of Steps
// spent awaiting a condition (mostly the pipeline's compressed timers) or
// a window's wall-time duration (a random schedule's spacing);
// Setup includes the preflight, the sandbox (schema, queues, links) and
// the migration. The CPU of Postgres, RabbitMQ and the harness is read
// machine-wide (rig.ReadServiceCPU): a run's own only when it runs
// alone; the pods' is the run's own.
type Cost struct {
	Setup    time.Duration `json:"setup"`
	Steps    time.Duration `json:"steps"`
	Waiting  time.Duration `json:"waiting"`
	Settle   time.Duration `json:"settle"`
	Teardown time.Duration `json:"teardown"`
	CPU      rig.CPU       `json:"cpu"`
	// Jumps counts the clock jumps of the settle (jump.go); Jumped is the
	// virtual time they skipped, which no phase above waited for.
	Jumps  int           `json:"jumps,omitempty"`
	Jumped time.Duration `json:"jumped,omitempty"`
}

// Wall is the run's wall time, phase by phase.
func (c Cost) Wall() time.Duration { return c.Setup + c.Steps + c.Settle + c.Teardown }

// String is one line: "wall 4.1s = setup 1.2s + steps 2.1s (waiting 1.8s) + …; cpu 3.0s = pods 1.1s + …".
func (c Cost) String() string {
	r := func(d time.Duration) string { return d.Round(10 * time.Millisecond).String() }
	out := fmt.Sprintf("wall %s = setup %s + steps %s (waiting %s) + settle %s + teardown %s",
		r(c.Wall()), r(c.Setup), r(c.Steps), r(c.Waiting), r(c.Settle), r(c.Teardown))
	if c.Jumps > 0 {
		out += fmt.Sprintf(" (clock jumped %d× past %s)", c.Jumps, r(c.Jumped))
	}
	if len(c.CPU) == 0 {
		return out
	}
	var parts []string
	for _, k := range sortedClasses(c.CPU) {
		parts = append(parts, k+" "+r(c.CPU[k]))
	}
	return out + fmt.Sprintf("; cpu %s = %s", r(c.CPU.Total()), strings.Join(parts, " + "))
}

// Add sums costs (for a table over many runs).
func (c Cost) Add(o Cost) Cost {
	c.Setup += o.Setup
	c.Steps += o.Steps
	c.Waiting += o.Waiting
	c.Settle += o.Settle
	c.Teardown += o.Teardown
	c.Jumps += o.Jumps
	c.Jumped += o.Jumped
	cpu := rig.CPU{}
	for k, v := range c.CPU {
		cpu[k] += v
	}
	for k, v := range o.CPU {
		cpu[k] += v
	}
	c.CPU = cpu
	return c
}

// sortedClasses lists the classes, the largest first.
func sortedClasses(c rig.CPU) []string {
	var ks []string
	for k := range c {
		ks = append(ks, k)
	}
	sort.Slice(ks, func(i, j int) bool {
		if c[ks[i]] != c[ks[j]] {
			return c[ks[i]] > c[ks[j]]
		}
		return ks[i] < ks[j]
	})
	return ks
}

// meter times a run's phases as it goes.
type meter struct {
	last time.Time
	cpu0 rig.CPU
}

func newMeter() *meter {
	m := &meter{last: time.Now()}
	m.cpu0, _ = rig.ReadServiceCPU() // no /proc: no CPU figures
	return m
}

// lap returns the time since the previous lap.
func (m *meter) lap() time.Duration {
	now := time.Now()
	d := now.Sub(m.last)
	m.last = now
	return d
}

// cpu returns the CPU used since the meter started, the pods' included.
func (m *meter) cpu(pods []*rig.Pod) rig.CPU {
	if m.cpu0 == nil {
		return nil
	}
	now, err := rig.ReadServiceCPU()
	if err != nil {
		return nil
	}
	out := now.Sub(m.cpu0)
	for _, p := range pods {
		out[rig.CPUPods] += p.CPU()
	}
	return out
}

// waitClock measures the wall time during which at least one step awaits
// a condition: parallel awaits overlap and count once, so Waiting never
// exceeds Steps.
type waitClock struct {
	mu     sync.Mutex
	active int
	since  time.Time
	sum    time.Duration
}

func (w *waitClock) begin() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.active == 0 {
		w.since = time.Now()
	}
	w.active++
}

func (w *waitClock) end() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.active--
	if w.active == 0 {
		w.sum += time.Since(w.since)
	}
}

func (w *waitClock) total() time.Duration {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.sum
}
