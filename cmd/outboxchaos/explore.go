//go:build !pod

package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/outboxchaos/outboxchaos/branches"
	"github.com/outboxchaos/outboxchaos/checker"
	"github.com/outboxchaos/outboxchaos/reports"
	"github.com/outboxchaos/outboxchaos/rig"
	"github.com/outboxchaos/outboxchaos/scenarios"
	"github.com/outboxchaos/outboxchaos/scenarios/explore"
	"github.com/outboxchaos/outboxchaos/system/canary"
)

// runExplore runs a budget of random fault schedules (or one shard of it,
// or one schedule again) and checks the contract on each.
func runExplore(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := subcommandFlags("explore", "[flags]", commands["explore"].summary, stderr)
	checks := fs.Int("checks", 100, "random schedules in the whole budget (all shards together)")
	seed := fs.Int64("seed", 1, "the budget's seed: schedule i is drawn from a seed of its own derived from it")
	parallel := fs.Int("parallel", 4, "schedules run at once, each in its own schema and queues")
	shardArg := fs.String("shard", "", "run only shard K/N of the budget (schedules K-1, K-1+N, …), e.g. 3/8 in a CI matrix of 8")
	only := fs.Int("only", -1, "run schedule I alone (what a violation's replay line gives)")
	artifacts := fs.String("artifacts", "artifacts", "directory for the records of violating runs")
	verbose := fs.Bool("v", false, "print each violating run's timeline; with --only, the run's timeline, faults and final state whatever its verdict, as scenario run -v does")
	ledger := fs.String("ledger", "", "append the budget's counts to this exploration ledger (\"\": none; make explore: artifacts/explored.jsonl, LEDGER=reports/explored.jsonl the committed one), with --cover-dir also the error branches its pods reached, by name, for the report's union of every branch ever reached")
	recordAll := fs.Bool("record-all", false, "write every run's record under --artifacts, not only the violating ones'")
	noJumps := fs.Bool("no-jumps", false, "never jump the clock when nothing is in flight (while a run settles or a step waits): wait for every timer in real time")
	junit := fs.String("junit", "", "also write a JUnit XML report to this file (one test case per schedule)")
	explain := fs.Int("explain", -1, "print schedule I and the deadlines each of its faults straddles, and run nothing")
	guided := fs.Bool("guided", false, "coverage-guided: keep the schedules whose pods reached an error branch first and mutate them for half the later ones (needs --cover-dir)")
	coverArg := fs.String("cover-dir", "", "give the pods this empty folder as GOCOVERDIR and map the error branches of system/ they reached (the binary built with -cover: make cover-bin)")
	coverage := fs.String("coverage", "", "also write the fault family × phase coverage (single and pairwise, by fired evidence) to this JSON file")
	pairs := fs.Bool("pairs", false, fmt.Sprintf("run the held-pair sweep instead of random schedules: each pair of concurrent units of work × the point one is held at × the fault the other meets, one schedule each (%d; --checks is then that number)", len(explore.PairCells())))
	bug := fs.String("bug", "", "arm this canary bug in every pod of every schedule (not with --ledger): how many schedules the search needs to find a known defect, unaided")
	fresh := freshSchemasFlag(fs)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *bug != "" && !canary.Known(*bug) {
		return usagef("unknown canary %q (known: %s)", *bug, strings.Join(canary.Names, ", "))
	}
	if *bug != "" && *ledger != "" {
		return usagef("--bug with --ledger: a budget run with a canary bug is not the pipeline's exploration; leave out --ledger")
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	if *pairs {
		if set["checks"] || *guided {
			return usagef("--pairs runs the whole sweep (%d schedules): leave out --checks and --guided", len(explore.PairCells()))
		}
		*checks = len(explore.PairCells())
	}
	if *explain >= 0 {
		s, _, err := explore.Budget{Seed: *seed, Pairs: *pairs}.Schedule(*explain)
		if err != nil {
			return usageError{err}
		}
		fmt.Fprint(stdout, explore.Explain(s))
		return nil
	}
	if fs.NArg() > 0 {
		return usagef("unexpected arguments: %s", strings.Join(fs.Args(), " "))
	}
	shard, err := explore.ParseShard(*shardArg)
	if err != nil {
		return usageError{err}
	}
	if *checks < 0 || *parallel < 1 {
		return usagef("--checks must not be negative and --parallel must be at least 1")
	}
	if *checks == 0 && *only < 0 {
		return usagef("--checks 0: a budget of no schedule explores nothing (give --checks N, or --only I for one schedule)")
	}
	if *only >= 0 && *shardArg != "" {
		return usagef("--only replays one schedule: leave out --shard")
	}
	if *guided && (*coverArg == "" || *only >= 0 || *shardArg != "") {
		return usagef("--guided needs --cover-dir, and runs the whole budget (no --only, no --shard)")
	}
	o, err := harnessOptions()
	if err != nil {
		return err
	}
	o.Artifacts, o.RecordAll, o.NoJumps, o.Bug = *artifacts, *recordAll, *noJumps, *bug
	if o.CoverDir, err = coverDir(*coverArg); err != nil {
		return err
	}
	b := explore.Budget{Seed: *seed, Checks: *checks, Shard: shard, Parallel: *parallel, Only: *only, Pairs: *pairs}
	if *pairs && *only >= *checks {
		return usagef("--only %d: the sweep has cells 0 to %d", *only, *checks-1)
	}
	idx := b.Indexes()
	if len(idx) == 0 {
		return usagef("shard %s of a budget of %d schedules holds none: nothing to run", shard, *checks)
	}
	ci := ciOutput{junit: *junit}
	if err := ci.preflight(ctx, o); err != nil {
		return err
	}
	defer keepSchemas(&o, *fresh, stderr)()
	fmt.Fprintf(stdout, "explore: %d schedules (budget %d, seed %d, shard %s), %d at a time\n", len(idx), *checks, *seed, shard, *parallel)
	start := time.Now()
	busy0, _, busyErr := rig.ReadMachineCPU()
	done := 0
	line := func(r explore.ScheduleRun, extra string) {
		done++
		fmt.Fprintf(stdout, "[%d/%d] %s schedule %d %.1fs (%.0f a minute so far)%s: %s\n", done, len(idx), r.Result.Outcome(), r.Index,
			r.Result.Duration.Seconds(), explore.Rate(done, time.Since(start)), extra, r.Schedule)
	}
	var runs []explore.ScheduleRun
	var mutated map[int]bool // guided runs replayed from their record
	var reached *branches.Map
	if *guided {
		bs, err := systemBranches()
		if err != nil {
			return err
		}
		runs, mutated, reached = exploreGuided(ctx, b, o, bs, line)
	} else {
		runs = explore.RunBudget(ctx, b, o, func(r explore.ScheduleRun) { line(r, "") })
	}
	wall := time.Since(start)
	ran, failed, errored := tallySchedules(runs)
	fmt.Fprintf(stdout, "\nexplore: %d schedules in %s, %.1f a minute; %d broke the contract, %d not judged (ERROR)\n",
		ran, wall.Round(time.Second), explore.Rate(ran, wall), len(failed), len(errored))
	printCost(stdout, "schedule", runs)
	printPool(stdout, o.Sandboxes)
	if busy1, cores, err := rig.ReadMachineCPU(); busyErr == nil && err == nil && ran > 0 && cores > 0 {
		busy := busy1 - busy0
		fmt.Fprintf(stdout, "the whole machine: %s of CPU per schedule (%d cores %.0f %% busy over the budget's %s)\n",
			(busy / time.Duration(ran)).Round(10*time.Millisecond), cores, 100*busy.Seconds()/(wall.Seconds()*float64(cores)), wall.Round(time.Second))
	}
	if o.CoverDir != "" && ctx.Err() == nil {
		if reached == nil {
			if reached, err = errorBranches(ctx, o.CoverDir); err != nil {
				return err
			}
		}
		printBranches(stdout, reached)
	}
	for _, r := range append(failed, errored...) {
		replay := r.Replay(*seed)
		if *bug != "" {
			replay += " --bug " + *bug
		}
		if mutated[r.Index] {
			replay = "outboxchaos scenario run --file " + r.Result.Artifacts + " (a mutated schedule: its record holds it)"
		}
		fmt.Fprintf(stdout, "%s schedule %d: %s\n    %s\n    replay: %s\n", r.Result.Outcome(), r.Index, r.Schedule, firstLine(r.Result), replay)
		if r.Result.Artifacts != "" {
			fmt.Fprintf(stdout, "    record: %s\n", r.Result.Artifacts)
		}
		if *verbose && *only < 0 {
			fmt.Fprint(stdout, r.Result.Timeline)
		}
	}
	if *verbose && *only >= 0 {
		// A replay of one schedule: its timeline whatever the verdict.
		for _, r := range runs {
			if r.Result.Name != "" {
				printResult(stdout, r.Result, true)
			}
		}
	}
	cov := explore.NewCoverage()
	for _, r := range runs {
		if r.Result.Name != "" && r.Result.NotJudged == nil {
			cov.Add(r.Result.Faults, r.Result.Events)
			cov.AddHeld(r.Schedule, r.Result.Faults)
		}
	}
	fmt.Fprintln(stdout)
	cov.WriteTable(stdout)
	if *coverage != "" {
		if err := writeCoverage(*coverage, cov); err != nil {
			return err
		}
	}
	if *junit != "" {
		var rs []scenarios.Result
		for _, r := range runs {
			if r.Result.Name != "" {
				r.Result.Name = fmt.Sprintf("schedule-%d", r.Index)
				rs = append(rs, r.Result)
			}
		}
		var err error
		if p, ok := interruption(ctx, len(idx)-ran, len(idx), "schedules"); ok {
			err = ci.writeProblem(p, rs, wall)
		} else {
			err = writeJUnit(*junit, rs, wall)
		}
		if err != nil {
			return err
		}
	}
	// A run not judged explored nothing.
	var verdicts []checker.Verdict
	for _, r := range runs {
		if r.Result.Name != "" && r.Result.NotJudged == nil {
			verdicts = append(verdicts, r.Result.Verdict)
		}
	}
	appendLedger(*ledger, reports.LedgerSchedules, ran-len(errored), len(failed), *seed, *shardArg, cov, reports.CountBranches(reached),
		reports.CountInvariants(verdicts), stdout, stderr)
	switch {
	case len(failed) > 0:
		return errVerdictFailed
	case ran < len(idx):
		return fmt.Errorf("%w: explore stopped after %d of %d schedules", errNotJudged, ran, len(idx))
	case len(errored) > 0:
		return errNotJudged
	}
	return nil
}

// tallySchedules counts the schedules that ran (not those a cancel kept
// from starting) and splits out those that broke the contract and those
// not judged: a run not judged never counts as broken.
func tallySchedules(runs []explore.ScheduleRun) (ran int, failed, errored []explore.ScheduleRun) {
	for _, r := range runs {
		if r.Result.Name == "" {
			continue // not started: cancelled
		}
		ran++
		switch r.Result.Outcome() {
		case scenarios.OutcomeFail:
			failed = append(failed, r)
		case scenarios.OutcomeError:
			errored = append(errored, r)
		}
	}
	return ran, failed, errored
}

// writeCoverage writes the exploration's coverage as JSON (the report
// generator's data).
func writeCoverage(path string, c *explore.Coverage) error {
	return writeJSON(path, c, "  ", "coverage")
}

// printCost prints what the runs cost, summed: wall time by phase and CPU
// by process class, and the CPU per run. Postgres, RabbitMQ and the harness are read machine-wide, so with
// runs in parallel each run's share overlaps the others': the sum is over
// runs, the per-run figure an upper bound.
func printCost(w io.Writer, what string, runs []explore.ScheduleRun) {
	var sum scenarios.Cost
	n := 0
	for _, r := range runs {
		if r.Result.Name != "" {
			sum = sum.Add(r.Result.Cost)
			n++
		}
	}
	if n == 0 {
		return
	}
	fmt.Fprintf(w, "cost, summed over %d runs: %s\n", n, sum)
	fmt.Fprintf(w, "cost per %s: wall %s, pods' CPU %s, all CPU %s (machine-wide classes overlap when runs are parallel)\n", what,
		(sum.Wall() / time.Duration(n)).Round(10*time.Millisecond), (sum.CPU[rig.CPUPods] / time.Duration(n)).Round(10*time.Millisecond),
		(sum.CPU.Total() / time.Duration(n)).Round(10*time.Millisecond))
}

// exploreGuided runs the budget coverage-guided (explore.RunGuided): each
// run's pods write to a folder of their own under o.CoverDir, read back
// after the run against bs, the branches found once. It returns the runs, which of them were mutations (replayed
// from their record) and the error branches all of them reached.
func exploreGuided(ctx context.Context, b explore.Budget, o scenarios.Options, bs []branches.Branch,
	line func(explore.ScheduleRun, string)) ([]explore.ScheduleRun, map[int]bool, *branches.Map) {
	all := &branches.Map{}
	g := explore.Guided{Seed: b.Seed, Checks: b.Checks, Parallel: b.Parallel, CoverDir: o.CoverDir,
		Reach: func(ctx context.Context, dir string) (map[string]bool, error) {
			m, err := reachIn(ctx, dir, bs) // the source is read once, not per run
			if err != nil {
				return nil, err
			}
			all.Merge(m)
			return m.Reached, nil
		}}
	var runs []explore.ScheduleRun
	mutated := map[int]bool{}
	for _, r := range explore.RunGuided(ctx, g, o, func(r explore.GuidedRun) {
		extra := ""
		if r.Parent >= 0 {
			extra = fmt.Sprintf(", %s of %d", r.Mutation, r.Parent)
		}
		switch {
		case r.ReachErr != nil:
			extra += fmt.Sprintf(", coverage not read: %v", r.ReachErr)
		case len(r.Fresh) > 0:
			extra += fmt.Sprintf(", %d new error branches", len(r.Fresh))
		}
		line(r.ScheduleRun, extra)
	}) {
		runs = append(runs, r.ScheduleRun)
		if r.Parent >= 0 {
			mutated[r.Index] = true
		}
	}
	return runs, mutated, all
}
