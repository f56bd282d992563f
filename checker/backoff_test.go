package checker

import (
	"strings"
	"testing"
	"time"

	"github.com/outboxchaos/outboxchaos/history"
)

// TestBackoffViolations: each failure's wait is checked against its own
// step, the last step repeats, and a flat schedule is caught.
func TestBackoffViolations(t *testing.T) {
	t.Parallel()
	steps := []time.Duration{time.Minute, 2 * time.Minute, 4 * time.Minute}
	t0 := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	fail := func(attempt int, wait time.Duration) history.Event {
		return history.Event{Pod: "relay-1", Name: "publish-failed", Attrs: map[string]any{"outbox_id": float64(1), "attempt": float64(attempt),
			"failed_at": t0.Format(time.RFC3339Nano), "next_attempt_at": t0.Add(wait).Format(time.RFC3339Nano)}}
	}
	good := []history.Event{fail(1, time.Minute), fail(2, 2*time.Minute), fail(3, 4*time.Minute), fail(7, 4*time.Minute)}
	if got := BackoffViolations(good, steps); len(got) != 0 {
		t.Fatalf("the schedule itself: %q", got)
	}
	flat := []history.Event{fail(1, time.Minute), fail(2, time.Minute), fail(3, time.Minute)}
	if got := BackoffViolations(flat, steps); len(got) != 2 || !strings.Contains(got[0], "failed publish 2 waits 1m0s, want 2m0s") {
		t.Fatalf("a flat schedule: %q", got)
	}
	if got := BackoffViolations(flat, nil); len(got) != 0 {
		t.Fatalf("no recorded schedule is not checked: %q", got)
	}
	broken := history.Event{Pod: "relay-1", Name: "publish-failed", Attrs: map[string]any{"outbox_id": float64(1)}}
	if got := BackoffViolations([]history.Event{broken}, steps); len(got) != 1 {
		t.Fatalf("an event without its times: %q", got)
	}
	other := fail(2, time.Minute)
	other.Pod = "worker-1"
	if got := BackoffViolations([]history.Event{other}, steps); len(got) != 0 {
		t.Fatalf("only the relays' events count: %q", got)
	}
	if v := Judge(flat, nil, State{Backoff: steps, Settled: true}); v.OK() || v.BackoffBroken != 2 {
		t.Fatalf("Judge: %s", v)
	}
}

// TestFlatBackoffCaughtOnlyByTheSchedule: the recorded run of canary
// flat-backoff keeps every other part of the contract; only the backoff
// rule goes red.
func TestFlatBackoffCaughtOnlyByTheSchedule(t *testing.T) {
	t.Parallel()
	rec := loadRun(t, "backoff-schedule-seed650027-flat-backoff")
	onlyBroken(t, rec, "backoff")
}
