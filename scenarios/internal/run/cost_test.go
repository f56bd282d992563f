package run

import (
	"strings"
	"testing"
	"time"

	"github.com/outboxchaos/outboxchaos/rig"
)

// TestWaitClockCountsOverlapOnce: two awaits in parallel steps count their
// union, so Waiting never exceeds the steps' wall time.
func TestWaitClockCountsOverlapOnce(t *testing.T) {
	t.Parallel()
	var w waitClock
	t0 := time.Now()
	w.begin()
	w.begin() // a parallel await
	time.Sleep(20 * time.Millisecond)
	w.end()
	time.Sleep(20 * time.Millisecond)
	w.end()
	wall := time.Since(t0)
	if got := w.total(); got > wall || got < 40*time.Millisecond {
		t.Fatalf("waited %s over a wall of %s: want the union, ≥ 40ms", got, wall)
	}
}

// TestCostAddsUp: the wall is the sum of the phases, Add sums phase by
// phase and class by class, and the line names the largest class first.
func TestCostAddsUp(t *testing.T) {
	t.Parallel()
	a := Cost{Setup: time.Second, Steps: 2 * time.Second, Waiting: time.Second, Settle: time.Second, Teardown: time.Second,
		CPU: rig.CPU{rig.CPUPods: time.Second, rig.CPUPostgres: 3 * time.Second}}
	b := Cost{Setup: time.Second, CPU: rig.CPU{rig.CPUPods: time.Second, rig.CPURabbitMQ: time.Second}}
	s := a.Add(b)
	if s.Wall() != 6*time.Second || s.CPU.Total() != 6*time.Second || s.CPU[rig.CPUPods] != 2*time.Second {
		t.Fatalf("sum %+v: wall %s, cpu %s", s, s.Wall(), s.CPU.Total())
	}
	if a.CPU[rig.CPUPods] != time.Second {
		t.Fatal("Add changed its receiver's CPU map")
	}
	line := s.String()
	if !strings.HasPrefix(line, "wall 6s = setup 2s + steps 2s (waiting 1s) + settle 1s + teardown 1s; cpu 6s = postgres 3s + pods 2s") {
		t.Fatalf("line %q", line)
	}
}
