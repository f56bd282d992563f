package checker

import (
	"fmt"
	"time"
)

// BackoffViolations lists the failed publishes (a relay's "publish-failed"
// events) whose next attempt was not due exactly one backoff step after
// the failure: the attempt-th failure waits backoff[attempt-1], the last
// step repeating (SPEC: 1, 2, 4, 8, 16, then 30 minutes). The claim
// statement never takes a row before its next attempt is due, so the
// schedule the events state is the schedule the row followed. Empty
// backoff: not checked.
func BackoffViolations(history []Event, backoff []time.Duration) []string {
	if len(backoff) == 0 {
		return nil
	}
	var out []string
	for _, e := range history {
		if e.Name != "publish-failed" || !podMatches(e.Pod, "relay-") {
			continue
		}
		attempt, ok := e.Int("attempt")
		failed, ferr := time.Parse(time.RFC3339Nano, e.Str("failed_at"))
		next, nerr := time.Parse(time.RFC3339Nano, e.Str("next_attempt_at"))
		if !ok || attempt < 1 || ferr != nil || nerr != nil {
			out = append(out, fmt.Sprintf("backoff: %s logged a failed publish of outbox row %s without its attempt, failure and next-attempt times",
				e.Pod, e.Str("outbox_id")))
			continue
		}
		want := backoff[min(int(attempt), len(backoff))-1]
		if got := next.Sub(failed); got != want {
			out = append(out, fmt.Sprintf("backoff: outbox row %s failed publish %d waits %s, want %s", e.Str("outbox_id"), attempt, got, want))
		}
	}
	return out
}
