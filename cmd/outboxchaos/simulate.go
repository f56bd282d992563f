//go:build !pod

package main

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"github.com/outboxchaos/outboxchaos/sim"
)

// runSimulate simulates a production day (or, with "capacity", the
// capacity runs) and writes the report with its charts.
func runSimulate(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) > 0 && args[0] == "capacity" {
		return runCapacity(ctx, args[1:], stdout, stderr)
	}
	fs := subcommandFlags("simulate", "[flags]  |  outboxchaos simulate capacity [flags]", commands["simulate"].summary, stderr)
	cfgPath := fs.String("config", "", "a day as JSON or YAML (default: the built-in weekday; see sim/days/)")
	seed := fs.Int64("seed", 1, "seed of the workload and the fault plan")
	rate := fs.Float64("rate", 0, "virtual seconds per real second while work is in flight (0: the day's)")
	out := fs.String("out", "artifacts/SIMULATION.md", "where to write the report (charts go beside it; make simulate: reports/SIMULATION.md, the committed page)")
	quiet := fs.Bool("quiet", false, "no progress bar")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usagef("usage: outboxchaos simulate [--config day.json|yaml] [--seed N] [--rate R] [--out FILE]  |  outboxchaos simulate capacity")
	}
	day := sim.Default()
	if *cfgPath != "" {
		d, err := sim.Load(*cfgPath)
		if err != nil {
			return usageError{err}
		}
		day = d
	}
	if *rate < 0 || *rate > 1000 {
		return usagef("--rate %g: want 1 to 1000 (0: the day's)", *rate)
	}
	o, err := simOptions(ctx, *seed, *rate, *quiet, stderr)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "simulating %s (%d members, %d messages at most, seed %d)\n", day.Name, day.Members, day.Messages(), *seed)
	res, err := sim.Run(ctx, day, o)
	if err != nil {
		return err
	}
	fmt.Fprint(stdout, res.Summary())
	command := "outboxchaos simulate " + strings.Join(args, " ")
	if err := sim.WriteReport(*out, res, nil, strings.TrimSpace(command)); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "report: %s (charts in %s)\n", *out, strings.TrimSuffix(*out, filepath.Ext(*out))+"/")
	return simOutcome(res)
}

// simOutcome is a day's exit: 1 when an invariant broke, 3 when its
// compression was not valid (the figures were distorted, so the day is
// not judged), 0 when neither.
func simOutcome(res *sim.Result) error {
	if !res.Verdict.OK() || res.ContractErr != nil {
		return fmt.Errorf("%w: the day broke the contract: %s", errVerdictFailed, res.Verdict)
	}
	if !res.Lag.Valid {
		return fmt.Errorf("%w: the day's compression is not valid: %s", errNotJudged, res.Lag.Why)
	}
	return nil
}

func simOptions(ctx context.Context, seed int64, rate float64, quiet bool, stderr io.Writer) (sim.Options, error) {
	so, err := harnessOptions()
	if err != nil {
		return sim.Options{}, err
	}
	if err := preflightServices(ctx, so); err != nil {
		return sim.Options{}, err
	}
	o := sim.Options{PGURL: so.PGURL, AMQPURL: so.AMQPURL, Bin: so.Bin, Seed: seed, Rate: rate}
	if !quiet {
		o.Progress = stderr
		if pw, ok := stderr.(pipeWatch); ok {
			o.Progress = pw.w // the terminal itself: the bar draws only on one
		}
	}
	return o, nil
}
