package bench

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestStatFieldSkipsTheCommand: the fields are counted after the command
// name, which may hold spaces and parentheses.
func TestStatFieldSkipsTheCommand(t *testing.T) {
	p := filepath.Join(t.TempDir(), "stat")
	// pid (comm) state ppid … utime(14th) stime cutime cstime
	line := "42 (a) b (c)) S 7 1 1 0 -1 0 0 0 0 0 250 30 4 5 20 0\n"
	if err := os.WriteFile(p, []byte(line), 0o600); err != nil {
		t.Fatal(err)
	}
	if got := statField(p, 1); got != "7" {
		t.Errorf("parent = %q, want 7", got)
	}
	if got, want := procCPU(p, false), 2800*time.Millisecond; got != want {
		t.Errorf("utime+stime = %s, want %s", got, want)
	}
	if got, want := procCPU(p, true), 2890*time.Millisecond; got != want {
		t.Errorf("with children = %s, want %s", got, want)
	}
}

// TestCPUSinceCountsThisProcess: CPU this process burns between two
// samples shows as Self, and within the machine's total. The loop ends on
// its own CPU time, not on a clock.
func TestCPUSinceCountsThisProcess(t *testing.T) {
	s0 := sampleCPU()
	if !s0.ok {
		t.Skip("no /proc here")
	}
	const burn = 100 * time.Millisecond
	for x := 0; procCPU("/proc/self/stat", false)-s0.self < burn; x++ {
		_ = x * x
	}
	c, ok := cpuSince(s0)
	if !ok {
		t.Fatal("second sample failed")
	}
	if c.Self < burn {
		t.Errorf("self %s, want at least %s", c.Self, burn)
	}
	if c.Total() < c.Self || c.Broker < 0 || c.Database < 0 {
		t.Errorf("inconsistent split %+v", c)
	}
}
