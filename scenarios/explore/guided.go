package explore

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"sync"

	"github.com/outboxchaos/outboxchaos/scenarios"
)

// Guided is a coverage-guided exploration (explore --guided, part 5): schedules run in rounds of Parallel; a schedule whose pods
// reached an error branch no earlier run had reached joins the corpus,
// and from the second round on half the schedules are mutations of a
// corpus member (Mutate) instead of fresh draws, as a fuzzer keeps and
// mutates the inputs that reached new code.
type Guided struct {
	Seed     int64
	Checks   int
	Parallel int
	// CoverDir holds one folder of coverage counters per run (run-N),
	// given to its pods as GOCOVERDIR.
	CoverDir string
	// Reach reads one run's folder and returns the branches it reached,
	// by ID (package branches).
	Reach func(ctx context.Context, dir string) (map[string]bool, error)
}

// GuidedRun is one schedule of a guided exploration.
type GuidedRun struct {
	ScheduleRun
	// Parent is the index of the corpus run it was mutated from (-1: a
	// fresh draw, BudgetSchedule(Seed, Index)), Mutation how.
	Parent   int
	Mutation string
	// Fresh are the branches it reached first; ReachErr why its
	// coverage could not be read.
	Fresh    []string
	ReachErr error
}

// RunGuided runs g's budget; progress, if set, hears of each run as it
// ends. A mutated schedule is replayed from its record (the run's folder
// under Options.Artifacts holds its scenario), not from the seed alone.
func RunGuided(ctx context.Context, g Guided, o scenarios.Options, progress func(GuidedRun)) []GuidedRun {
	par := max(g.Parallel, 1)
	reached := map[string]bool{}
	var corpus []int // indexes into out
	var out []GuidedRun
	d := NewRandDraw(ScheduleSeed(g.Seed, -1))
	for start := 0; start < g.Checks && ctx.Err() == nil; start += par {
		n := min(par, g.Checks-start)
		round := make([]GuidedRun, n)
		for k := range round {
			i := start + k
			r := GuidedRun{ScheduleRun: ScheduleRun{Index: i, Schedule: budgetSchedule(g.Seed, i)}, Parent: -1}
			if len(corpus) > 0 && d.Int("mutate or draw", 0, 1) == 1 {
				r.Parent = corpus[d.Int("corpus member", 0, len(corpus)-1)]
				r.Schedule, r.Mutation = mutate(out[r.Parent].Schedule, NewRandDraw(ScheduleSeed(g.Seed, i)))
			}
			round[k] = r
		}
		var wg sync.WaitGroup
		for k := range round {
			wg.Go(func() {
				r := &round[k]
				oi := o
				oi.Seed = ScheduleSeed(g.Seed, r.Index) % 1_000_000
				oi.CoverDir = filepath.Join(g.CoverDir, fmt.Sprintf("run-%d", r.Index))
				if err := os.MkdirAll(oi.CoverDir, 0o755); err != nil {
					r.ReachErr = fmt.Errorf("coverage folder: %w", err)
					oi.CoverDir = ""
				}
				r.Result = scenarios.Run(ctx, r.Schedule.Scenario(fmt.Sprintf("schedule-%d", r.Index)), oi)
			})
		}
		wg.Wait()
		for k := range round {
			r := &round[k]
			if r.Result.NotJudged == nil && r.ReachErr == nil && ctx.Err() == nil {
				var got map[string]bool
				got, r.ReachErr = g.Reach(ctx, filepath.Join(g.CoverDir, fmt.Sprintf("run-%d", r.Index)))
				for id := range got {
					if !reached[id] {
						reached[id] = true
						r.Fresh = append(r.Fresh, id)
					}
				}
				sort.Strings(r.Fresh)
				if len(r.Fresh) > 0 {
					corpus = append(corpus, len(out))
				}
			}
			out = append(out, *r)
			if progress != nil {
				progress(*r)
			}
		}
	}
	return out
}
