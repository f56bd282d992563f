package checker

import (
	"cmp"
	"slices"
	"testing"
	"time"

	"github.com/outboxchaos/outboxchaos/history"
)

// TestOrderViolations: the age bound flags a claim that took younger rows
// while older ones waited unheld, and nothing it cannot be sure of.
func TestOrderViolations(t *testing.T) {
	t.Parallel()
	due := time.Date(2026, 12, 3, 10, 0, 0, 0, time.UTC)
	var state State
	for id := int64(1); id <= 4; id++ {
		state.Outbox = append(state.Outbox, OutboxRow{ID: id, Kind: "K", Status: "PUBLISHED", Due: due})
	}
	job := func(at time.Duration) history.Event {
		return history.Event{At: at, Pod: "job-1", Name: history.Job, Attrs: map[string]any{history.KeyKind: "K"}}
	}
	claim := func(began, at time.Duration, ids ...any) history.Event {
		return history.Event{At: at, Took: at - began, Pod: "relay-1", Name: history.Claim, Attrs: map[string]any{history.KeyIDs: ids}}
	}
	s := time.Second
	newestFirst := []history.Event{job(1 * s), claim(1900*time.Millisecond, 2*s, 3.0, 4.0), claim(2400*time.Millisecond, 2500*time.Millisecond, 1.0, 2.0)}
	for _, tc := range []struct {
		name   string
		h      []history.Event
		faults []FaultRecord
		state  State
		want   int
	}{
		{"younger rows claimed first", newestFirst, nil, state, 2},
		{"oldest first", []history.Event{job(s), claim(1900*time.Millisecond, 2*s, 1.0, 2.0), claim(2400*time.Millisecond, 2500*time.Millisecond, 3.0, 4.0)}, nil, state, 0},
		{"the older rows' claim overlapped", []history.Event{job(s), claim(1900*time.Millisecond, 2*s, 3.0, 4.0), claim(1950*time.Millisecond, 2500*time.Millisecond, 1.0, 2.0)}, nil, state, 0},
		{"claim began before the commit was logged", []history.Event{job(1950 * time.Millisecond), newestFirst[1], newestFirst[2]}, nil, state, 0},
		{"a relay run failed", append([]history.Event{{At: 3 * s, Pod: "relay-2", Name: history.RunFailed}}, newestFirst...), nil, state, 0},
		{"a relay was killed first", newestFirst, []FaultRecord{{Kind: "kill", Target: "relay-2", Start: s, Components: []string{"relay"}}}, state, 0},
		{"a relay was killed after", newestFirst, []FaultRecord{{Kind: "kill", Target: "relay-2", Start: 3 * s, Components: []string{"relay"}}}, state, 2},
		{"a vendor fault", newestFirst, []FaultRecord{{Kind: "vendor", Target: "5xx", Start: 0, Components: []string{"vendor"}}}, state, 2},
		{"a fault that does not say what it acts on", newestFirst, []FaultRecord{{Kind: "crash-point", Target: "db:claim", Start: 0}}, state, 0},
		{"a worker's database link down", newestFirst, []FaultRecord{{Kind: "down", Target: "postgres-worker", Start: 0, Components: []string{"postgres-worker"}}}, state, 2},
		{"the relay's database link down", newestFirst, []FaultRecord{{Kind: "down", Target: "postgres-relay", Start: 0, Components: []string{"postgres-relay"}}}, state, 0},
		{"older rows that failed a publish", append([]history.Event{
			{At: 3 * s, Pod: "relay-1", Name: history.PublishFailed, Attrs: map[string]any{history.KeyOutboxID: 1.0}},
			{At: 3 * s, Pod: "relay-1", Name: history.PublishFailed, Attrs: map[string]any{history.KeyOutboxID: 2.0}}}, newestFirst...), nil, state, 0},
		{"no claim says when it began", []history.Event{job(s), {At: 2 * s, Pod: "relay-1", Name: history.Claim, Attrs: map[string]any{history.KeyIDs: []any{3.0, 4.0}}}, newestFirst[2]}, nil, state, 0},
		{"a relay died with a claim in flight", append([]history.Event{{At: 500 * time.Millisecond, Pod: "relay-1", Name: history.Start}, {At: 1500 * time.Millisecond, Pod: "relay-1", Name: history.Start}}, newestFirst...), nil, state, 0},
	} {
		if got := OrderViolations(sortedAt(tc.h), tc.faults, tc.state); len(got) != tc.want {
			t.Errorf("%s: %d violations %q, want %d", tc.name, len(got), got, tc.want)
		}
	}
}

// sortedAt returns h in time order, as a run's history is.
func sortedAt(h []history.Event) []history.Event {
	out := slices.Clone(h)
	slices.SortStableFunc(out, func(a, b history.Event) int { return cmp.Compare(a.At, b.At) })
	return out
}
