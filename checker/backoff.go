package checker

import (
	"fmt"
	"time"

	"github.com/outboxchaos/outboxchaos/history"
)

// backoff: every failed publish waits its step of the relay's backoff
// schedule (BackoffViolations).
var backoff = Invariant{
	Name:    "backoff",
	Doc:     "every failed publish's next attempt is due one backoff step later",
	Check:   func(in Input) []string { return BackoffViolations(in.History, in.State.Backoff) },
	Counter: func(v *Verdict) *int { return &v.BackoffBroken },
}

// BackoffViolations lists the failed publishes (a relay's "publish-failed"
// events) whose next attempt was not due exactly one backoff step after
// the failure: the attempt-th failure waits backoff[attempt-1], the last
// step repeating (the design: 1, 2, 4, 8, 16, then 30 minutes). The claim
// statement never takes a row before its next attempt is due, so the
// schedule the events state is the schedule the row followed. Empty
// backoff: not checked.
func BackoffViolations(h []history.Event, steps []time.Duration) []string {
	if len(steps) == 0 {
		return nil
	}
	var out []string
	for _, e := range h {
		if e.Name != history.PublishFailed || !podMatches(e.Pod, "relay-") {
			continue
		}
		attempt, ok := e.Int(history.KeyAttempt)
		failed, ferr := time.Parse(time.RFC3339Nano, e.Str(history.KeyFailedAt))
		next, nerr := time.Parse(time.RFC3339Nano, e.Str(history.KeyNextAttemptAt))
		if !ok || attempt < 1 || ferr != nil || nerr != nil {
			out = append(out, fmt.Sprintf("backoff: %s logged a failed publish of outbox row %s without its attempt, failure and next-attempt times",
				e.Pod, e.Str(history.KeyOutboxID)))
			continue
		}
		want := steps[min(int(attempt), len(steps))-1]
		if got := next.Sub(failed); got != want {
			out = append(out, fmt.Sprintf("backoff: outbox row %s failed publish %d waits %s, want %s", e.Str(history.KeyOutboxID), attempt, got, want))
		}
	}
	return out
}
