package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/outboxchaos/outboxchaos/checker"
	"github.com/outboxchaos/outboxchaos/scenarios"
	"github.com/outboxchaos/outboxchaos/system/canary"
)

var errVerdictFailed = errors.New("verdict: FAIL")

func runScenario(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		return usagef("want `scenario list`, `scenario show NAME`, `scenario run NAME|all|--file FILE` or `scenario check RUN.json…`")
	}
	switch args[0] {
	case "list":
		tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "NAME\tROW\tDESCRIPTION")
		for _, s := range scenarios.Catalogue() {
			fmt.Fprintf(tw, "%s\t%s\t%s\n", s.Name, s.Row, s.Description)
		}
		return tw.Flush()
	case "run":
		return scenarioRun(ctx, args[1:], stdout, stderr)
	case "show":
		return scenarioShow(args[1:], stdout, stderr)
	case "check":
		return scenarioCheck(args[1:], stdout)
	default:
		return usagef("unknown scenario subcommand %q (want list, show, run or check)", args[0])
	}
}

func scenarioRun(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("outboxchaos scenario run", flag.ContinueOnError)
	fs.SetOutput(stderr)
	seed := fs.Int64("seed", 0, "seed for the fault network (0: from the time)")
	quiet := fs.Bool("quiet", false, "print only the verdict lines")
	verbose := fs.Bool("v", false, "print every log line of every pod in the timeline")
	artifacts := fs.String("artifacts", "artifacts", "directory for the record, scenario and timeline of failed runs")
	record := fs.Bool("record", false, "write the artifacts of passing runs too")
	file := fs.String("file", "", "run the scenario in this JSON file (a scenario, or a run.json to replay with its seed and canary)")
	bug := fs.String("bug", "", "enable this canary bug in every pod")
	impl := fs.String("impl", "", "the relay under test: ours (default) or a peer (outboxchaos peers --list)")
	// Allow NAME before or after the flags.
	var names []string
	for len(args) > 0 {
		if err := parseFlags(fs, args); err != nil {
			return err
		}
		if fs.NArg() == 0 {
			break
		}
		names = append(names, fs.Arg(0))
		args = fs.Args()[1:]
	}
	var list []*scenarios.Scenario
	var recorded *checker.Record
	switch {
	case *file != "" && len(names) > 0:
		return usagef("give a scenario name or --file, not both")
	case *file != "":
		s, rec, err := loadScenario(*file)
		if err != nil {
			return err
		}
		list, recorded = []*scenarios.Scenario{s}, rec
	case len(names) != 1:
		fmt.Fprintln(stderr, "usage: outboxchaos scenario run NAME|all|--file FILE [--seed N] [--bug B] [--quiet] [-v] [--record]")
		printNames(stderr)
		return usagef("want exactly one scenario name, got %d", len(names))
	case names[0] == "all":
		list = scenarios.Catalogue()
	default:
		s, ok := scenarios.Lookup(names[0])
		if !ok {
			s, ok = scenarios.LookupPeerCase(names[0])
		}
		if !ok {
			printNames(stderr)
			return usagef("unknown scenario %q", names[0])
		}
		list = []*scenarios.Scenario{s}
	}
	bin, err := os.Executable()
	if err != nil {
		return fmt.Errorf("find own binary for the pods: %w", err)
	}
	o := scenarios.DefaultOptions()
	o.Bin, o.Artifacts, o.RecordAll, o.Bug, o.Impl = bin, *artifacts, *record, *bug, *impl
	if recorded != nil {
		o.Seed = recorded.Seed
		if *bug == "" {
			o.Bug = recorded.Bug
		}
	}
	if *seed != 0 {
		o.Seed = *seed
	}
	if o.Bug != "" && !canary.Known(o.Bug) {
		return usagef("unknown canary %q (known: %s)", o.Bug, strings.Join(canary.Names, ", "))
	}
	failed := 0
	start := time.Now()
	for _, s := range list {
		if !*quiet {
			fmt.Fprintf(stdout, "=== %s (SPEC row %s)\n    %s\n    fault:    %s\n    expected: %s\n", s.Name, s.Row, s.Description, s.Fault, s.Outcome)
		}
		res := scenarios.Run(ctx, s, o)
		if !*quiet {
			printResult(stdout, res, *verbose)
		}
		fmt.Fprintln(stdout, verdictLine(res))
		if res.Artifacts != "" {
			fmt.Fprintf(stdout, "    artifacts: %s\n", res.Artifacts)
		}
		if recorded != nil {
			fmt.Fprintln(stdout, compareRecorded(*recorded, res))
		}
		if !res.Pass() {
			failed++
		}
	}
	if len(list) > 1 {
		fmt.Fprintf(stdout, "%d scenarios, %d passed, %d failed in %.1fs\n", len(list), len(list)-failed, failed, time.Since(start).Seconds())
	}
	if failed > 0 {
		return errVerdictFailed
	}
	return nil
}

func printNames(w io.Writer) {
	fmt.Fprintln(w, "valid scenario names:")
	for _, n := range scenarios.Names() {
		fmt.Fprintf(w, "  %s\n", n)
	}
	fmt.Fprintln(w, "  all")
}

func verdictLine(r scenarios.Result) string {
	status := "PASS"
	if !r.Pass() {
		status = "FAIL"
	}
	line := fmt.Sprintf("VERDICT %s %s (row %s) seed=%d %.1fs: %s", status, r.Name, r.Row, r.Seed, r.Duration.Seconds(), r.Verdict)
	if r.Err != nil {
		line += "\n    " + strings.ReplaceAll(r.Err.Error(), "\n", "\n    ")
	}
	if !r.Verdict.OK() {
		for _, d := range r.Verdict.Details {
			line += "\n    " + d
		}
	}
	return line
}

func printResult(w io.Writer, r scenarios.Result, verbose bool) {
	fmt.Fprintln(w, "--- timeline")
	for _, l := range strings.Split(strings.TrimRight(r.Timeline, "\n"), "\n") {
		if verbose || scenarios.Notable(l) {
			fmt.Fprintln(w, l)
		}
	}
	fmt.Fprintln(w, "--- faults")
	for _, f := range r.Faults {
		fmt.Fprintf(w, "  +%.3fs  %-18s %-22s fired=%v %s\n", f.At.Seconds(), f.Kind, f.Target, f.Fired, f.Detail)
	}
	fmt.Fprintln(w, "--- final state")
	s := r.State
	fmt.Fprintf(w, "  outbox:  %s\n", countBy(len(s.Outbox), func(i int) string { return s.Outbox[i].Status }))
	fmt.Fprintf(w, "  inbox:   %s\n", countBy(len(s.Inbox), func(i int) string { return s.Inbox[i].Status }))
	fmt.Fprintf(w, "  handset: %d messages\n", len(s.Ledger))
	fmt.Fprintf(w, "  queues:  main=%d retry=%d parking=%d\n", s.Queues.Main, s.Queues.Retry, s.Queues.Parking)
	fmt.Fprintf(w, "  alerts:  %s\n", countBy(len(s.Alerts), func(i int) string { return s.Alerts[i].Kind }))
	for _, d := range r.Verdict.Details {
		fmt.Fprintf(w, "  %s\n", d)
	}
}

func countBy(n int, key func(int) string) string {
	if n == 0 {
		return "none"
	}
	m := map[string]int{}
	for i := 0; i < n; i++ {
		m[key(i)]++
	}
	var keys []string
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var parts []string
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%s=%d", k, m[k]))
	}
	return strings.Join(parts, " ")
}
