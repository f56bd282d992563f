package killpoint

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
)

// ArmFromEnv arms the kill-points named by EnvVar, the failpoints named by
// FailEnvVar and the pause-points named by PauseEnvVar (unset or empty:
// none). The process entry point calls it
// once at start-up; nothing in system/ reads the environment for hooks. A
// bad spec is an error naming the variable (and, for an unknown name, the
// valid ones); then nothing is armed.
func ArmFromEnv() error {
	kills, err := parseSpec("kill-point", os.Getenv(EnvVar), Names)
	if err != nil {
		return fmt.Errorf("%s: %w", EnvVar, err)
	}
	fails, err := parseSpec("failpoint", os.Getenv(FailEnvVar), FailNames)
	if err != nil {
		return fmt.Errorf("%s: %w", FailEnvVar, err)
	}
	pauses, err := parseSpec("pause-point", os.Getenv(PauseEnvVar), Names)
	if err != nil {
		return fmt.Errorf("%s: %w", PauseEnvVar, err)
	}
	killSet.arm(kills)
	failSet.arm(fails)
	pauseSet.arm(pauses)
	return nil
}

// parseSpec parses the one spec grammar of kill-points and failpoints: a
// comma-separated list of "name" (its first hit) or "name:N" (its Nth hit,
// N ≥ 1), blanks around an entry ignored. An empty spec arms nothing. kind
// ("kill-point", "failpoint") names the points in errors; known lists the
// valid names.
func parseSpec(kind, spec string, known []string) (map[string]int, error) {
	out := map[string]int{}
	if strings.TrimSpace(spec) == "" {
		return out, nil
	}
	for _, part := range strings.Split(spec, ",") {
		n, count := strings.TrimSpace(part), 1
		if i := strings.LastIndexByte(n, ':'); i >= 0 {
			c, err := strconv.Atoi(n[i+1:])
			if err != nil || c < 1 {
				return nil, fmt.Errorf("%s %q: hit number must be a positive integer", kind, part)
			}
			n, count = n[:i], c
		}
		if !contains(known, n) {
			return nil, fmt.Errorf("unknown %s %q (known: %s)", kind, n, strings.Join(known, ", "))
		}
		out[n] = count
	}
	return out, nil
}

func contains(names []string, n string) bool {
	for _, k := range names {
		if k == n {
			return true
		}
	}
	return false
}

// pointSet is a group of armed points, each firing on its Nth hit. A hit
// costs one atomic load while nothing in the set is armed.
type pointSet struct {
	armed atomic.Bool
	mu    sync.Mutex
	nth   map[string]int // armed point → the hit that fires
	hits  map[string]int // armed point → hits so far
}

var killSet, failSet pointSet

// arm replaces the armed points with points and forgets every hit.
func (s *pointSet) arm(points map[string]int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.nth, s.hits = points, map[string]int{}
	s.armed.Store(len(points) > 0)
}

// has reports whether p is armed.
func (s *pointSet) has(p string) bool {
	if !s.armed.Load() {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	_, ok := s.nth[p]
	return ok
}

// hit counts a hit of p. It returns the hit's number and whether it is the
// armed one (false, without counting, for a point that is not armed).
func (s *pointSet) hit(p string) (int, bool) {
	if !s.armed.Load() {
		return 0, false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	nth, ok := s.nth[p]
	if !ok {
		return 0, false
	}
	s.hits[p]++
	return s.hits[p], s.hits[p] == nth
}
