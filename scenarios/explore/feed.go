package explore

import (
	"fmt"
	"strconv"
	"time"

	"github.com/outboxchaos/outboxchaos/faults"
	"github.com/outboxchaos/outboxchaos/scenarios/internal/run"
	"github.com/outboxchaos/outboxchaos/scenarios/scenario"
)

// Feed is sustained load: while the pipeline runs, the
// batch job runs again Rounds times, Gap apart, each round seeding Step
// more members of every kind, so new rows arrive while earlier ones are
// still claimed, queued or being sent. Its batch is small (Batch rows a
// claim), so the backlog outlasts several relay runs; a round that starts
// before the last one ended is a job re-run racing another, as a cron job
// re-run by hand is.
type Feed struct {
	Rounds int             `json:"rounds"`
	Step   int             `json:"step"`
	Gap    faults.Duration `json:"gap"`
	// Batch is the batch-size the feed sets, 0 when the schedule already
	// set one (a boundary or a swarm setting).
	Batch int `json:"batch,omitempty"`
}

func (f Feed) String() string {
	s := fmt.Sprintf("feed=%d×+%d every %s", f.Rounds, f.Step, f.Gap)
	if f.Batch > 0 {
		s += fmt.Sprintf(" batch %d", f.Batch)
	}
	return s
}

// feed draws sustained load for about one schedule in four.
func (s *Schedule) feed(d Draw) {
	if d.Int("sustained load", 0, 3) != 0 {
		return
	}
	f := Feed{Rounds: d.Int("feed rounds", 2, 5), Step: d.Int("feed step", 1, 5),
		Gap: faults.Duration(time.Duration(d.Int("feed gap ms", 50, 600)) * time.Millisecond)}
	if _, set := s.Config["batch-size"]; !set {
		f.Batch = d.Int("feed batch", 1, 4)
		s.Config = mergeConfig(s.Config, map[string]string{"batch-size": strconv.Itoa(f.Batch)})
	}
	s.Feed = &f
}

// feedSteps are the feed's job runs, each opening its own window of the
// schedule's parallel step: round k starts k gaps in and seeds k steps of
// members more than the schedule's own per_kind. A round that fails (a
// fault cut its database link) runs again until one completes, as a
// scheduled job is re-run: its business rows are seeded already, and
// judged.
func (s Schedule) feedSteps() []scenario.Step {
	if s.Feed == nil {
		return nil
	}
	var out []scenario.Step
	for k := 1; k <= s.Feed.Rounds; k++ {
		var cut *JobCut
		if s.JobCut != nil && s.JobCut.Round == k {
			cut = s.JobCut
		}
		out = append(out, scenario.Step{Do: "later", After: faults.Duration(time.Duration(k) * s.Feed.Gap.D()),
			Steps: []scenario.Step{cutEnqueue(scenario.Step{Do: "enqueue", PerKind: s.PerKind + k*s.Feed.Step}, cut)},
			Note:  fmt.Sprintf("sustained load: job run %d of %d while the pipeline runs", k, s.Feed.Rounds)})
	}
	return out
}

// feedSettle is the settle bound of sc, a schedule's scenario with
// sustained load: the usual bound, plus twice the time one relay takes to
// publish every row the rounds seed, a batch a run at the configured
// interval (the other relays may be the ones a fault stops). A feed that
// seeds more rows than one relay publishes within the usual bound would
// otherwise be judged stuck by the harness's own deadline, not by
// anything the pipeline did: 5 rounds of 5 more members of 5 kinds are
// 140 rows, 35 s of relay runs at 2 rows every 500 ms.
func (s Schedule) feedSettle(sc *scenario.Scenario) time.Duration {
	c := run.Compressed()
	if err := scenario.ApplyConfig(&c, sc.Config); err != nil || c.BatchSize < 1 || c.RelayInterval <= 0 {
		return sc.SettleWithin()
	}
	batch := c.BatchSize
	if s.Drain {
		batch = drainBatch // the relay pods' own setting
	}
	rows := len(s.Kinds) * (s.PerKind + s.Feed.Rounds*s.Feed.Step)
	runs := (rows + batch - 1) / batch
	return sc.SettleWithin() + 2*time.Duration(runs)*c.RelayInterval
}
