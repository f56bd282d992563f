package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/outboxchaos/outboxchaos/scenarios"
	"github.com/outboxchaos/outboxchaos/system/canary"
)

// runCanary is the canary sweep: each deliberately broken variant must turn
// at least one scenario red. Exit 1 if a canary survives.
func runCanary(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("outboxchaos canary", flag.ContinueOnError)
	fs.SetOutput(stderr)
	bug := fs.String("bug", "", "only this canary (default: all): "+strings.Join(canary.Names, ", "))
	seed := fs.Int64("seed", 0, "seed for the fault network (0: from the time)")
	artifacts := fs.String("artifacts", "artifacts", "directory for the records of the runs that went red (each a checker fixture)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usagef("unexpected arguments: %s", strings.Join(fs.Args(), " "))
	}
	var bugs []string
	if *bug != "" {
		if !canary.Known(*bug) {
			return usagef("unknown canary %q (known: %s)", *bug, strings.Join(canary.Names, ", "))
		}
		bugs = []string{*bug}
	}
	bin, err := os.Executable()
	if err != nil {
		return fmt.Errorf("find own binary for the pods: %w", err)
	}
	o := scenarios.DefaultOptions()
	o.Bin, o.Artifacts = bin, *artifacts
	if *seed != 0 {
		o.Seed = *seed
	}
	results := scenarios.Sweep(ctx, o, bugs, func(c scenarios.CanaryResult, r scenarios.Result) {
		state := "still green (not caught)"
		if !r.Pass() {
			state = "red (caught)"
		}
		fmt.Fprintf(stdout, "canary %-22s scenario %-26s %s in %.1fs\n", c.Bug, r.Name, state, r.Duration.Seconds())
		if !r.Pass() {
			fmt.Fprintf(stdout, "    %s\n", firstLine(r))
		}
	})
	survived := 0
	fmt.Fprintln(stdout)
	for _, c := range results {
		if c.Caught() {
			fmt.Fprintf(stdout, "CANARY CAUGHT   %-22s by %s\n", c.Bug, strings.Join(c.CaughtBy, ", "))
		} else {
			survived++
			fmt.Fprintf(stdout, "CANARY SURVIVED %-22s\n", c.Bug)
		}
	}
	if survived > 0 {
		fmt.Fprintf(stdout, "%d of %d canaries survived\n", survived, len(results))
		return errVerdictFailed
	}
	fmt.Fprintf(stdout, "all %d canaries caught\n", len(results))
	return nil
}

func firstLine(r scenarios.Result) string {
	if r.Err != nil {
		return strings.SplitN(r.Err.Error(), "\n", 2)[0]
	}
	return r.Verdict.String()
}
