//go:build !pod

package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"time"

	"github.com/jackc/pgx/v5"
	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/outboxchaos/outboxchaos/reports"
	"github.com/outboxchaos/outboxchaos/scenarios"
	"github.com/outboxchaos/outboxchaos/scenarios/catalogue"
	"github.com/outboxchaos/outboxchaos/scenarios/explore"
	"github.com/outboxchaos/outboxchaos/system/broker"
)

// runReport runs the named scenarios, a budget of random schedules and the
// canary sweep, and writes RELIABILITY.md.
func runReport(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := subcommandFlags("report", "[flags]", commands["report"].summary, stderr)
	fresh := freshSchemasFlag(fs)
	checks := fs.Int("checks", 30, "random schedules to run")
	seed := fs.Int64("seed", 1, "seed of the random schedules and the fault network")
	out := fs.String("out", "artifacts/RELIABILITY.md", "where to write the report (make report: reports/RELIABILITY.md, the committed page)")
	skipCanaries := fs.Bool("skip-canaries", false, "leave out the canary sweep")
	reconciled := fs.Bool("reconciled", true, "run each random schedule a second time with a reconciler that re-sends, and compare")
	crashSample := fs.Int("crash-sample", 8, "crash points to run per crash-point workload, picked by --seed (0: leave them out)")
	coverArg := fs.String("cover-dir", "", "give the pods this empty folder as GOCOVERDIR and add the map of the error branches of system/ they reached (the binary built with -cover: make cover-bin)")
	ledger := fs.String("ledger", "artifacts/explored.jsonl", "the exploration ledger: this report's schedules and crash points are added to it, and its totals shown (\"\": neither; make report: reports/explored.jsonl, the committed one)")
	pattern := fs.String("run", "", "run only the named scenarios whose name matches this regular expression (default: the whole catalogue)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 || *checks < 0 {
		return usagef("usage: outboxchaos report [--checks N] [--seed S] [--run REGEX] [--out FILE]")
	}
	named := catalogue.Named()
	if *pattern != "" {
		var err error
		if named, err = selectScenarios(nil, *pattern); err != nil {
			return err
		}
	}
	o, err := harnessOptions()
	if err != nil {
		return err
	}
	o.Seed = *seed
	if o.CoverDir, err = coverDir(*coverArg); err != nil {
		return err
	}
	if err := preflightServices(ctx, o); err != nil {
		return err
	}
	defer keepSchemas(&o, *fresh, stderr)()
	rep := reports.Reliability{Catalogue: named, PropertySeed: *seed}
	rep.Env, err = environment(ctx, o)
	if err != nil {
		return err
	}
	// failed counts runs that broke the contract and canaries that
	// survived; errored runs not judged.
	failed, errored := 0, 0
	tally := func(r scenarios.Result) {
		switch r.Outcome() {
		case scenarios.OutcomeFail:
			failed++
		case scenarios.OutcomeError:
			errored++
		}
	}
	for i, s := range rep.Catalogue {
		if ctx.Err() != nil {
			break // interrupted: the rest would only say so
		}
		res := scenarios.Run(ctx, s, o)
		fmt.Fprintf(stdout, "[%d/%d] %s\n", i+1, len(rep.Catalogue), verdictLine(res))
		tally(res)
		rep.Named = append(rep.Named, res)
	}
	d := explore.NewRandDraw(*seed)
	for i := 0; i < *checks && ctx.Err() == nil; i++ {
		sch := explore.Generate(d)
		res := scenarios.Run(ctx, sch.Scenario(fmt.Sprintf("property-%d", i+1)), o)
		fmt.Fprintf(stdout, "[schedule %d/%d] %s\n    %s\n", i+1, *checks, sch, verdictLine(res))
		tally(res)
		rep.Property = append(rep.Property, reports.PropertyRun{Schedule: sch, Result: res})
		if *reconciled {
			// The same schedule again, with a reconciler that re-sends.
			sch.Reconcile = "resend"
			res := scenarios.Run(ctx, sch.Scenario(fmt.Sprintf("property-%d-reconciled", i+1)), o)
			fmt.Fprintf(stdout, "[schedule %d/%d reconciled] %s\n", i+1, *checks, verdictLine(res))
			tally(res)
			rep.Reconciled = append(rep.Reconciled, reports.PropertyRun{Schedule: sch, Result: res})
		}
	}
	if *crashSample > 0 && ctx.Err() == nil {
		if err := reportCrashPoints(ctx, &rep, o, *crashSample, *seed, stdout); err != nil {
			return err
		}
	}
	// A run not judged explored nothing and broke nothing: the ledger
	// counts the judged ones.
	crashRan, crashBad := 0, 0
	for _, c := range rep.Crash {
		for _, oc := range c.Outcomes {
			tally(oc.Result)
			if !oc.NotJudged() {
				crashRan++
			}
			if oc.Violation() {
				crashBad++
			}
		}
	}
	schedRan, schedBad := 0, 0
	for _, r := range append(append([]reports.PropertyRun(nil), rep.Property...), rep.Reconciled...) {
		switch r.Result.Outcome() {
		case scenarios.OutcomeFail:
			schedRan++
			schedBad++
		case scenarios.OutcomePass:
			schedRan++
		}
	}
	cov := explore.NewCoverage()
	for _, r := range append(append([]reports.PropertyRun(nil), rep.Property...), rep.Reconciled...) {
		if r.Result.NotJudged == nil {
			cov.Add(r.Result.Faults, r.Result.Events)
			cov.AddHeld(r.Schedule, r.Result.Faults)
		}
	}
	if !*skipCanaries && ctx.Err() == nil {
		co := o
		co.CoverDir = "" // a branch only a deliberate bug reaches was not reached by a fault
		rep.Canaries = explore.Sweep(ctx, co, nil, func(c explore.CanaryResult, r scenarios.Result) {
			fmt.Fprintf(stdout, "[canary %s] %s: %s\n", c.Bug, r.Name, r.Outcome())
		})
		for _, c := range rep.Canaries {
			switch c.Outcome() {
			case scenarios.OutcomeFail:
				failed++
			case scenarios.OutcomeError:
				errored++
			}
		}
	}
	if ctx.Err() != nil {
		// An interrupted report would commit runs nobody let finish; it
		// writes no page, so the ledger, whose totals the page shows,
		// does not count its runs either.
		return fmt.Errorf("%w: interrupted: %s and the ledger left as they were", errNotJudged, *out)
	}
	if o.CoverDir != "" {
		if rep.Branches, err = errorBranches(ctx, o.CoverDir); err != nil {
			return err
		}
		printBranches(stdout, rep.Branches)
	}
	appendLedger(*ledger, reports.LedgerSchedules, schedRan, schedBad, *seed, "", cov, reports.CountBranches(rep.Branches), nil, stdout, stderr)
	appendLedger(*ledger, reports.LedgerCrashPoints, crashRan, crashBad, *seed, "", nil, nil, nil, stdout, stderr)
	if *ledger != "" {
		if rep.Explored, err = reports.ReadLedger(*ledger); err != nil {
			return err
		}
		if rep.Branches != nil {
			printEver(stdout, rep.Branches, rep.Explored)
		}
	}
	if old, err := os.ReadFile(*out); err == nil {
		if g, ok := reports.ParseGlance(string(old)); ok {
			rep.Previous = &g
		}
	}
	if err := os.MkdirAll(filepath.Dir(*out), 0o755); err != nil {
		return fmt.Errorf("create report directory: %w", err)
	}
	f, err := os.Create(*out)
	if err != nil {
		return fmt.Errorf("create report: %w", err)
	}
	if err := reports.WriteReliability(f, rep); err != nil {
		f.Close()
		return fmt.Errorf("write report: %w", err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("write report: %w", err)
	}
	if line := reports.InputsLine(filepath.Base(*out)); line != "" {
		if err := appendTo(*out, line); err != nil {
			return err
		}
	}
	fmt.Fprintf(stdout, "wrote %s\n", *out)
	if failed > 0 || errored > 0 {
		fmt.Fprintf(stdout, "%d runs did not match (or canaries survived), %d not judged\n", failed, errored)
	}
	switch {
	case failed > 0:
		return errVerdictFailed
	case errored > 0:
		return errNotJudged
	}
	return nil
}

// appendLedger records a finished exploration in the ledger at path (""
// records nothing) and says so on stdout; a failure to record is reported
// on stderr, never fatal.
func appendLedger(path, what string, count, violations int, seed int64, shard string, cov *explore.Coverage, br *reports.BranchCount, inv map[string]reports.InvariantCount, stdout, stderr io.Writer) {
	if path == "" || count == 0 {
		return
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		fmt.Fprintf(stderr, "outboxchaos: create the exploration ledger's folder: %v\n", err)
		return
	}
	e := reports.Exploration{At: time.Now().UTC(), Commit: reports.Commit(), What: what, Count: count, Violations: violations, Seed: seed, Shard: shard,
		Coverage: cov, Branches: br, Invariants: inv}
	if err := reports.AppendLedger(path, e); err != nil {
		fmt.Fprintf(stderr, "outboxchaos: %v\n", err)
		return
	}
	named := ""
	if br != nil {
		named = fmt.Sprintf(", and the %d error branches they reached by name (file, function, guard)", len(br.Keys))
	}
	fmt.Fprintf(stdout, "ledger %s: recorded %d %s, %d violations%s\n", path, count, what, violations, named)
}

func environment(ctx context.Context, o scenarios.Options) (reports.Environment, error) {
	env := reports.Environment{Go: runtime.Version(), Cores: runtime.NumCPU(), Commit: "unknown", Date: time.Now()}
	env.Commit = reports.Commit()
	cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	conn, err := pgx.Connect(cctx, o.PGURL)
	if err != nil {
		return env, fmt.Errorf("Postgres unreachable (set OUTBOXCHAOS_PG_URL): %w", err)
	}
	defer conn.Close(ctx)
	if err := conn.QueryRow(cctx, `SHOW server_version`).Scan(&env.Postgres); err != nil {
		return env, fmt.Errorf("read Postgres version: %w", err)
	}
	ac, _, err := broker.Dial(o.AMQPURL, amqp.Config{Dial: amqp.DefaultDial(5 * time.Second)})
	if err != nil {
		return env, fmt.Errorf("RabbitMQ unreachable (set OUTBOXCHAOS_AMQP_URL): %w", err)
	}
	defer ac.Close()
	env.RabbitMQ = fmt.Sprint(ac.Properties["version"])
	return env, nil
}

// reportCrashPoints runs k crash points of each workload (picked by seed
// from those up to hit 3) into rep.
func reportCrashPoints(ctx context.Context, rep *reports.Reliability, o scenarios.Options, k int, seed int64, stdout io.Writer) error {
	const bound = 3
	for _, w := range explore.CrashWorkloads {
		d, _, err := explore.Discover(ctx, w, o)
		if err != nil {
			return err
		}
		all := d.Targets(bound)
		run := reports.CrashRun{Workload: w.Name, Points: len(all), Bound: bound}
		run.Outcomes = explore.Explore(ctx, w, explore.Sample(all, k, seed), o, 2, func(c explore.CrashOutcome) {
			fmt.Fprintf(stdout, "[crash point %s %s] %s\n", w.Name, c.Target, c.Result.Outcome())
		})
		rep.Crash = append(rep.Crash, run)
	}
	return nil
}
