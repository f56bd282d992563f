//go:build !pod

package main

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/outboxchaos/outboxchaos/scenarios"
	"github.com/outboxchaos/outboxchaos/scenarios/explore"
	"github.com/outboxchaos/outboxchaos/system/canary"
)

// runCanary is the canary sweep: each deliberately broken variant must turn
// at least one scenario red. Exit 1 if a canary survives.
func runCanary(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := subcommandFlags("canary", "[flags]", commands["canary"].summary, stderr)
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
	o, err := harnessOptions()
	if err != nil {
		return err
	}
	o.Artifacts = *artifacts
	if *seed != 0 {
		o.Seed = *seed
	}
	if err := preflightServices(ctx, o); err != nil {
		return err
	}
	results := explore.Sweep(ctx, o, bugs, func(c explore.CanaryResult, r scenarios.Result) {
		state := map[scenarios.Outcome]string{
			scenarios.OutcomePass:  "still green (not caught)",
			scenarios.OutcomeFail:  "red (caught)",
			scenarios.OutcomeError: "not judged (ERROR)",
		}[r.Outcome()]
		fmt.Fprintf(stdout, "canary %-22s scenario %-26s %s in %.1fs\n", c.Bug, r.Name, state, r.Duration.Seconds())
		if !r.Pass() {
			fmt.Fprintf(stdout, "    %s\n", firstLine(r))
		}
	})
	count := map[scenarios.Outcome]int{}
	var outs []scenarios.Outcome
	fmt.Fprintln(stdout)
	for _, c := range results {
		count[c.Outcome()]++
		outs = append(outs, c.Outcome())
		switch c.Outcome() {
		case scenarios.OutcomePass:
			fmt.Fprintf(stdout, "CANARY CAUGHT     %-22s by %s\n", c.Bug, strings.Join(c.CaughtBy, ", "))
		case scenarios.OutcomeError:
			fmt.Fprintf(stdout, "CANARY NOT JUDGED %-22s %s could not be judged (ERROR): neither caught nor survived\n", c.Bug, strings.Join(c.NotJudged, ", "))
		default:
			fmt.Fprintf(stdout, "CANARY SURVIVED   %-22s\n", c.Bug)
		}
	}
	fmt.Fprintf(stdout, "%d canaries: %d caught, %d survived, %d not judged\n", len(results),
		count[scenarios.OutcomePass], count[scenarios.OutcomeFail], count[scenarios.OutcomeError])
	// A canary that survived is the harness failing to fail: exit 1.
	return outcomeErr(scenarios.Worst(outs...))
}

// firstLine is the first line of why a run did not pass.
func firstLine(r scenarios.Result) string {
	if r.NotJudged != nil {
		return "not judged: " + strings.SplitN(r.NotJudged.Error(), "\n", 2)[0]
	}
	if r.Err != nil {
		return strings.SplitN(r.Err.Error(), "\n", 2)[0]
	}
	return r.Verdict.String()
}
