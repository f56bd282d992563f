package explore

import (
	"strconv"
	"testing"
	"time"

	"github.com/outboxchaos/outboxchaos/scenarios/internal/run"
	"github.com/outboxchaos/outboxchaos/scenarios/scenario"
)

// TestFeedSchedules: about one schedule in four keeps enqueuing while the
// pipeline runs; its scenario has one later step per round inside the
// parallel step, each seeding more members per kind than the last, with a
// small batch unless the schedule chose one. Its settle outlasts the time
// one relay takes to publish every row the rounds seed, or the harness's
// own deadline would judge a backlog it chose stuck.
func TestFeedSchedules(t *testing.T) {
	t.Parallel()
	fed := 0
	for seed := int64(0); seed < 1000; seed++ {
		s := Generate(NewRandDraw(seed))
		if s.Feed == nil {
			continue
		}
		fed++
		if s.Config["batch-size"] == "" {
			t.Fatalf("seed %d: %s: a feed without a batch size", seed, s)
		}
		sc := s.Scenario("feed")
		if err := sc.Validate(); err != nil {
			t.Fatalf("seed %d: %s: %v", seed, s, err)
		}
		var later []scenario.Step
		for _, st := range sc.Steps {
			if st.Do == "parallel" {
				for _, in := range st.Steps {
					if in.Do == "later" {
						later = append(later, in)
					}
				}
			}
		}
		if len(later) != s.Feed.Rounds {
			t.Fatalf("seed %d: %d later steps for %d rounds", seed, len(later), s.Feed.Rounds)
		}
		last := 0
		for _, st := range later {
			if st.After <= 0 || len(st.Steps) != 1 || st.Steps[0].Do != "enqueue" {
				t.Fatalf("seed %d: later step %+v", seed, st)
			}
			n := st.Steps[0].PerKind
			if n <= s.PerKind || n <= last {
				t.Fatalf("seed %d: round seeds %d members per kind after %d (per_kind %d)", seed, n, last, s.PerKind)
			}
			last = n
		}
		batch, err := strconv.Atoi(s.Config["batch-size"])
		if s.Drain {
			batch, err = drainBatch, nil
		}
		interval := run.Compressed().RelayInterval
		if v := s.Config["relay-interval"]; v != "" {
			interval, err = time.ParseDuration(v)
		}
		if err != nil || batch < 1 {
			t.Fatalf("seed %d: batch %q, relay interval %q: %v", seed, s.Config["batch-size"], s.Config["relay-interval"], err)
		}
		rows := len(s.Kinds) * last
		if need := scenario.DefaultSettle + time.Duration((rows+batch-1)/batch)*interval; sc.SettleWithin() < need {
			t.Fatalf("seed %d: %s: settle %s, but one relay publishes its %d rows in %s after the usual %s",
				seed, s, sc.SettleWithin(), rows, need-scenario.DefaultSettle, scenario.DefaultSettle)
		}
	}
	if fed < 150 || fed > 350 {
		t.Errorf("%d of 1000 schedules fed: want about one in four", fed)
	}
}
