//go:build !pod

package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/outboxchaos/outboxchaos/reports"
	"github.com/outboxchaos/outboxchaos/scenarios"
	"github.com/outboxchaos/outboxchaos/scenarios/explore"
	"github.com/outboxchaos/outboxchaos/system/canary"
)

// runCrashpoints enumerates the automatic crash points of a small workload
// and runs each: exit 1 if any run breaks the contract.
func runCrashpoints(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := subcommandFlags("crashpoints", "[flags]", commands["crashpoints"].summary, stderr)
	fresh := freshSchemasFlag(fs)
	var names []string
	for _, w := range explore.CrashWorkloads {
		names = append(names, w.Name)
	}
	workload := fs.String("workload", "all", "the workload: "+strings.Join(names, ", ")+" or all")
	bound := fs.Int("bound", 3, "explore hits 1..bound of every point")
	sample := fs.Int("sample", 0, "run only this many points of each workload, picked deterministically by --seed (0: all)")
	seed := fs.Int64("seed", 1, "seed: picks the sample; run i of a workload uses seed+i for its fault network")
	only := fs.String("only", "", "run only this point, <process>:<kind>:<label>:<side>:<hit> (skips discovery; what a violation's replay line gives)")
	process := fs.String("process", "", "only the points of this process: "+strings.Join(explore.CrashProcesses, ", "))
	parallel := fs.Int("parallel", 4, "runs at once (each run holds a few PostgreSQL connections: past about 8, runs meet the server's max_connections and are not judged)")
	bug := fs.String("bug", "", "enable this canary bug in every pod")
	artifacts := fs.String("artifacts", "artifacts", "directory for the records of violating runs")
	verbose := fs.Bool("v", false, "print each run's timeline (with --only)")
	var settings settingList
	fs.Var(&settings, "set", "a setting over each workload's configuration, NAME=VALUE by flag name (repeatable), e.g. --set delivery-limit=2")
	list := fs.Bool("list", false, "discovery only: print every point each process reached, with its hits, and run none")
	ledger := fs.String("ledger", "", "append the points explored to this exploration ledger (\"\": none; make crashpoints: artifacts/explored.jsonl, LEDGER=reports/explored.jsonl the committed one)")
	shardArg := fs.String("shard", "", "run only shard K/N of the points (every N-th, from the K-th; e.g. 3/8 in a CI matrix of 8)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	shard, err := explore.ParseShard(*shardArg)
	if err != nil {
		return usageError{err}
	}
	if fs.NArg() > 0 {
		return usagef("unexpected arguments: %s", strings.Join(fs.Args(), " "))
	}
	if *bound < 1 {
		return usagef("--bound must be at least 1")
	}
	if *sample < 0 || *parallel < 1 {
		return usagef("--sample must not be negative (0: every point) and --parallel must be at least 1")
	}
	if *bug != "" && !canary.Known(*bug) {
		return usagef("unknown canary %q (known: %s)", *bug, strings.Join(canary.Names, ", "))
	}
	if *process != "" && !slicesContains(explore.CrashProcesses, *process) {
		return usagef("unknown process %q (known: %s)", *process, strings.Join(explore.CrashProcesses, ", "))
	}
	workloads := explore.CrashWorkloads
	if *workload != "all" {
		w, ok := explore.LookupCrashWorkload(*workload)
		if !ok {
			return usagef("unknown workload %q (known: %s, all)", *workload, strings.Join(names, ", "))
		}
		workloads = []explore.CrashWorkload{w}
	}
	if len(settings) > 0 {
		var ws []explore.CrashWorkload
		for _, w := range workloads {
			cfg := map[string]string{}
			for k, v := range w.Config {
				cfg[k] = v
			}
			for _, kv := range settings {
				k, v, _ := strings.Cut(kv, "=")
				cfg[k] = v
			}
			w.Config = cfg
			if err := w.DiscoveryScenario(os.TempDir()).Validate(); err != nil {
				return usageError{err}
			}
			ws = append(ws, w)
		}
		workloads = ws
	}
	var target *explore.CrashTarget
	if *only != "" {
		t, err := explore.ParseCrashTarget(*only)
		if err != nil {
			return usageError{err}
		}
		target = &t
		if *workload == "all" {
			workloads = workloads[:1]
		}
	}
	o, err := harnessOptions()
	if err != nil {
		return err
	}
	o.Artifacts, o.Bug, o.Seed = *artifacts, *bug, *seed
	if err := preflightServices(ctx, o); err != nil {
		return err
	}
	defer keepSchemas(&o, *fresh, stderr)()

	start := time.Now()
	var violations, errored []explore.CrashOutcome
	total := map[string]int{}
	index := 0    // of each point across the workloads, for --shard
	selected := 0 // points chosen to run, over every workload
	for _, w := range workloads {
		var ts []explore.CrashTarget
		if target != nil {
			ts = []explore.CrashTarget{*target}
		} else {
			t0 := time.Now()
			d, res, err := explore.Discover(ctx, w, o)
			if err != nil {
				if res.Artifacts != "" {
					fmt.Fprintf(stdout, "    record: %s\n", res.Artifacts)
				}
				return err
			}
			if *list {
				for _, proc := range explore.CrashProcesses {
					for _, name := range sortedKeys(d[proc]) {
						fmt.Fprintf(stdout, "  %s:%s  %d hits\n", proc, name, d[proc][name])
					}
				}
			}
			all := d.Targets(*bound)
			fmt.Fprintf(stdout, "crashpoints %s: discovery reached %s in %.1fs; %d points up to hit %d\n",
				w.Name, perProcessSteps(d), time.Since(t0).Seconds(), len(all), *bound)
			if *process != "" {
				var keep []explore.CrashTarget
				for _, t := range all {
					if t.Process == *process {
						keep = append(keep, t)
					}
				}
				all = keep
			}
			if *list {
				continue
			}
			ts = explore.Sample(all, *sample, *seed)
			if len(ts) < len(all) {
				fmt.Fprintf(stdout, "crashpoints %s: a sample of %d of the %d points (seed %d)\n", w.Name, len(ts), len(all), *seed)
			}
			if shard.N > 1 {
				var mine []explore.CrashTarget
				for _, t := range ts {
					if shard.Has(index) {
						mine = append(mine, t)
					}
					index++
				}
				fmt.Fprintf(stdout, "crashpoints %s: shard %s runs %d of the %d points\n", w.Name, shard, len(mine), len(ts))
				ts = mine
			}
		}
		selected += len(ts)
		if len(ts) == 0 {
			continue
		}
		t0 := time.Now()
		explored, fired := map[string]int{}, map[string]int{}
		outs := explore.Explore(ctx, w, ts, o, *parallel, func(c explore.CrashOutcome) {
			state := c.Result.Outcome().String()
			if c.Result.Outcome() == scenarios.OutcomeFail {
				state = "VIOLATION"
			}
			reached := "died there"
			if !c.Fired {
				reached = "never reached"
			}
			fmt.Fprintf(stdout, "  %-9s %s  (%s, %.1fs)\n", state, c.Target, reached, c.Result.Duration.Seconds())
			if !c.Result.Pass() {
				fmt.Fprintf(stdout, "            %s\n", firstLine(c.Result))
			}
			if *verbose {
				fmt.Fprint(stdout, c.Result.Timeline)
			}
		})
		for _, c := range outs {
			if c.Result.Name == "" {
				continue // not run: cancelled
			}
			if c.Result.Outcome() == scenarios.OutcomeError {
				errored = append(errored, c) // not judged: explored nothing
				continue
			}
			explored[c.Target.Process]++
			total[c.Target.Process]++
			if c.Fired {
				fired[c.Target.Process]++
			}
			if c.Violation() {
				violations = append(violations, c)
			}
		}
		fmt.Fprintf(stdout, "crashpoints %s: explored %s in %s\n", w.Name, perProcess(explored, fired), time.Since(t0).Round(time.Second))
	}
	if selected == 0 && !*list && ctx.Err() == nil {
		return usagef("the selection holds no crash point (workload %s, process %q, shard %s): nothing to run", *workload, *process, shard)
	}
	appendLedger(*ledger, reports.LedgerCrashPoints, sum(total), len(violations), *seed, *shardArg, nil, nil, nil, stdout, stderr)
	fmt.Fprintf(stdout, "\ncrashpoints: explored %d points (%s) in %s; %d violations, %d not judged (ERROR)\n",
		sum(total), perProcess(total, nil), time.Since(start).Round(time.Second), len(violations), len(errored))
	for _, c := range errored {
		fmt.Fprintf(stdout, "ERROR %s %s: %s\n    replay: %s\n", c.Workload, c.Target, firstLine(c.Result), c.Replay())
	}
	for _, c := range violations {
		fmt.Fprintf(stdout, "VIOLATION %s %s: %s\n    replay: %s\n", c.Workload, c.Target, firstLine(c.Result), c.Replay())
		if c.Result.Artifacts != "" {
			fmt.Fprintf(stdout, "    record: %s/run.json\n", c.Result.Artifacts)
		}
	}
	switch {
	case len(violations) > 0:
		return errVerdictFailed
	case len(errored) > 0 || ctx.Err() != nil:
		return errNotJudged
	}
	return nil
}

// perProcessSteps says how many points (step and side) each process reached.
func perProcessSteps(d explore.Discovered) string {
	counts := map[string]int{}
	for proc, points := range d {
		counts[proc] = len(points)
	}
	return perProcess(counts, nil) + " step sides"
}

// perProcess is "job 12, worker 30 …" in the processes' order; with fired,
// "job 12 (11 died there)".
func perProcess(n, fired map[string]int) string {
	var parts []string
	procs := explore.CrashProcesses
	for _, p := range procs {
		s := fmt.Sprintf("%s %d", p, n[p])
		if fired != nil {
			s += fmt.Sprintf(" (%d died there)", fired[p])
		}
		parts = append(parts, s)
	}
	return strings.Join(parts, ", ")
}

func sum(m map[string]int) int {
	t := 0
	for _, v := range m {
		t += v
	}
	return t
}

func slicesContains(xs []string, x string) bool {
	for _, v := range xs {
		if v == x {
			return true
		}
	}
	return false
}

func sortedKeys(m map[string]int) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// settingList collects repeated --set NAME=VALUE flags.
type settingList []string

func (s *settingList) String() string { return strings.Join(*s, ",") }

func (s *settingList) Set(v string) error {
	if k, _, ok := strings.Cut(v, "="); !ok || k == "" {
		return fmt.Errorf("want NAME=VALUE, got %q", v)
	}
	*s = append(*s, v)
	return nil
}
