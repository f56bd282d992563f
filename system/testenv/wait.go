package testenv

import (
	"testing"
	"time"
)

// pollEvery is how often Eventually re-checks its condition.
const pollEvery = 10 * time.Millisecond

// Eventually waits until cond holds, checking it at once and then every
// 10 ms, and fails t (naming what was awaited) if it still does not hold
// after timeout. cond runs on the calling goroutine, so it may call t.Fatal.
//
// Use it to wait for an event, a count or a state the test then judges, never
// as a fixed sleep: it returns as soon as cond holds.
func Eventually(t testing.TB, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not reached within %s", what, timeout)
			return // a testing.TB whose Fatalf returns (a fake) still stops here
		}
		time.Sleep(pollEvery)
	}
}
