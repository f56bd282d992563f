package explore

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/outboxchaos/outboxchaos/scenarios"
)

// Budget is a number of random schedules to explore, each replayable
// alone: schedule i is drawn from its own seed (ScheduleSeed), so
// `outboxchaos explore --seed S --only I` runs exactly it again, on any
// runner, whatever else that runner's shard holds.
type Budget struct {
	Seed     int64 // the budget's seed: schedules, fault networks
	Checks   int   // schedules in the whole budget, over every shard
	Shard    Shard // this runner's part (the zero Shard: all of it)
	Parallel int   // schedules run at once (default 1)
	// Only, if >= 0, runs schedule Only alone (a replay); -1: the budget.
	Only int
	// Pairs makes the budget the held-pair sweep (PairCells): schedule i
	// is cell i's, and Checks is the number of cells.
	Pairs bool
}

// ScheduleRun is one explored schedule.
type ScheduleRun struct {
	Index    int
	Schedule Schedule
	Result   scenarios.Result
	Pairs    bool // a cell of the held-pair sweep
}

// Replay is the command that runs this schedule again, alone.
func (r ScheduleRun) Replay(seed int64) string {
	if r.Pairs {
		return fmt.Sprintf("outboxchaos explore --pairs --seed %d --only %d", seed, r.Index)
	}
	return fmt.Sprintf("outboxchaos explore --seed %d --only %d", seed, r.Index)
}

// Schedule is schedule i of the budget and the seed its run's network is
// drawn from; an error if the sweep's cell i has no schedule.
func (b Budget) Schedule(i int) (Schedule, int64, error) {
	if !b.Pairs {
		return budgetSchedule(b.Seed, i), ScheduleSeed(b.Seed, i), nil
	}
	s, seed, ok := PairSchedule(b.Seed, i)
	if !ok {
		return s, 0, fmt.Errorf("held-pair cell %d: no schedule of %d drawn kept its pair", i, pairSeedTries)
	}
	return s, seed, nil
}

// ScheduleSeed is the seed schedule i of a budget seeded seed is drawn
// from (SplitMix64 over both).
func ScheduleSeed(seed int64, i int) int64 {
	x := uint64(seed)*0x9e3779b97f4a7c15 + uint64(i) + 1
	x = (x ^ x>>30) * 0xbf58476d1ce4e5b9
	x = (x ^ x>>27) * 0x94d049bb133111eb
	return int64((x ^ x>>31) >> 1)
}

// budgetSchedule is schedule i of a budget: drawn from its own seed, and
// taking its turn among no reconciler, a settling one and a re-sending one
// (a swarm schedule drew its own, and a held pair of reconcilers needs a
// re-sending one).
func budgetSchedule(seed int64, i int) Schedule {
	s := Generate(NewRandDraw(ScheduleSeed(seed, i)))
	if s.Swarm == nil && s.Reconcile == "" {
		s.Reconcile = ReconcileModes[i%len(ReconcileModes)]
	}
	return s
}

// Indexes are the schedules this runner explores, in order.
func (b Budget) Indexes() []int {
	if b.Only >= 0 {
		return []int{b.Only}
	}
	var out []int
	for i := 0; i < b.Checks; i++ {
		if b.Shard.Has(i) {
			out = append(out, i)
		}
	}
	return out
}

// RunBudget explores the runner's schedules, Parallel at a time, each in
// its own schema and queues; progress, if set, hears of each as it ends.
// A cancelled ctx stops new schedules from starting. The runs come back in
// index order.
func RunBudget(ctx context.Context, b Budget, o scenarios.Options, progress func(ScheduleRun)) []ScheduleRun {
	idx := b.Indexes()
	out := make([]ScheduleRun, len(idx))
	par := max(b.Parallel, 1)
	jobs := make(chan int)
	var wg sync.WaitGroup
	var mu sync.Mutex
	for w := 0; w < par; w++ {
		wg.Go(func() {
			for k := range jobs {
				i := idx[k]
				s, seed, err := b.Schedule(i)
				oi := o
				oi.Seed = seed % 1_000_000
				name := fmt.Sprintf("schedule-%d", i)
				if b.Pairs {
					name = fmt.Sprintf("pair-%d", i)
				}
				r := ScheduleRun{Index: i, Schedule: s, Pairs: b.Pairs}
				if err != nil {
					r.Result = scenarios.Result{Name: name, NotJudged: err}
				} else {
					r.Result = scenarios.Run(ctx, s.Scenario(name), oi)
				}
				out[k] = r
				if progress != nil {
					mu.Lock()
					progress(r)
					mu.Unlock()
				}
			}
		})
	}
	for k := range idx {
		if ctx.Err() != nil {
			break
		}
		jobs <- k
	}
	close(jobs)
	wg.Wait()
	return out
}

// Rate is schedules per minute over a wall time.
func Rate(n int, wall time.Duration) float64 {
	if wall <= 0 {
		return 0
	}
	return float64(n) / wall.Minutes()
}
