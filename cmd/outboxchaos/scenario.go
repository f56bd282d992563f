//go:build !pod

package main

import (
	"context"
	"fmt"
	"io"
	"regexp"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/outboxchaos/outboxchaos/checker"
	"github.com/outboxchaos/outboxchaos/peers"
	"github.com/outboxchaos/outboxchaos/scenarios"
	"github.com/outboxchaos/outboxchaos/scenarios/catalogue"
	"github.com/outboxchaos/outboxchaos/scenarios/explore"
	"github.com/outboxchaos/outboxchaos/scenarios/scenario"
	"github.com/outboxchaos/outboxchaos/system/canary"
)

// scenarioSubcommands are `scenario`'s sub-commands and what each does.
var scenarioSubcommands = [][2]string{
	{"list", "the catalogue's names, design rows and descriptions"},
	{"show NAME", "a scenario as the JSON `scenario run --file` reads"},
	{"run NAME…|all|-run REGEX|--file FILE", "run scenarios against the real services; one VERDICT line each"},
	{"check RUN.json|RUN-FOLDER…", "recompute recorded runs' verdicts offline, with the checker alone"},
}

func scenarioUsage(w io.Writer) {
	fmt.Fprintln(w, "usage: outboxchaos scenario <sub-command> [flags]")
	fmt.Fprintf(w, "    %s\n\nsub-commands:\n", commands["scenario"].summary)
	for _, sc := range scenarioSubcommands {
		fmt.Fprintf(w, "  %-40s %s\n", sc[0], sc[1])
	}
	fmt.Fprintln(w, "\n`outboxchaos help scenario run` (or scenario run -h) shows a sub-command's flags.")
}

func runScenario(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		scenarioUsage(stderr)
		return usagef("want a sub-command: list, show, run or check")
	}
	switch args[0] {
	case "-h", "-help", "--help", "help":
		if args[0] == "help" && len(args) > 1 {
			return runScenario(ctx, []string{args[1], "-h"}, stdout, stderr)
		}
		scenarioUsage(stdout)
		return nil
	case "list":
		fs := subcommandFlags("scenario list", "", scenarioSubcommands[0][1], stderr)
		if err := parseFlags(fs, args[1:]); err != nil {
			return err
		}
		tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "NAME\tROW\tDESCRIPTION")
		for _, s := range catalogue.Named() {
			fmt.Fprintf(tw, "%s\t%s\t%s\n", s.Name, s.Row, s.Description)
		}
		return tw.Flush()
	case "run":
		return scenarioRun(ctx, args[1:], stdout, stderr)
	case "show":
		return scenarioShow(args[1:], stdout, stderr)
	case "check":
		return scenarioCheck(args[1:], stdout, stderr)
	default:
		scenarioUsage(stderr)
		return usagef("unknown scenario sub-command %q (want list, show, run or check)", args[0])
	}
}

func scenarioRun(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := subcommandFlags("scenario run", "NAME…|all|-run REGEX|--file FILE [flags]", scenarioSubcommands[2][1], stderr)
	fresh := freshSchemasFlag(fs)
	seed := fs.Int64("seed", 0, "seed for the fault network (0: from the time)")
	quiet := fs.Bool("quiet", false, "print only the verdict lines")
	verbose := fs.Bool("v", false, "print every line of the timeline: every log line of every pod, and each look of the clock unfolded")
	artifacts := fs.String("artifacts", "artifacts", "directory for the record, scenario and timeline of failed runs")
	record := fs.Bool("record", false, "write the artifacts of passing runs too")
	noJumps := fs.Bool("no-jumps", false, "never jump the clock when nothing is in flight (while a run settles or a step waits): wait for every timer in real time")
	file := fs.String("file", "", "run the scenario in this JSON file (a scenario, or a run.json to replay with its seed and canary)")
	bug := fs.String("bug", "", "enable this canary bug in every pod")
	impl := fs.String("impl", "", "the relay under test: "+strings.Join(peers.Names(), ", ")+" (default ours)")
	pattern := fs.String("run", "", "run only the scenarios whose name matches this regular expression (of the names given, else of the catalogue)")
	shardArg := fs.String("shard", "", "run only shard K/N of the selection (every N-th, from the K-th), e.g. 3/8 in a CI matrix of 8")
	jsonOut := fs.Bool("json", false, "print one JSON object per scenario on stdout (name, verdict, counts, seed, artifacts, cost) instead of the text")
	junit := fs.String("junit", "", "also write a JUnit XML report to this file (one test case per scenario)")
	// Allow NAMEs before or after the flags.
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
	shard, err := explore.ParseShard(*shardArg)
	if err != nil {
		return usageError{err}
	}
	if *impl != "" {
		if _, err := peers.Lookup(*impl); err != nil {
			return usagef("unknown relay under test %q (known: %s)", *impl, strings.Join(peers.Names(), ", "))
		}
	}
	var list []*scenario.Scenario
	var recorded *checker.Record
	switch {
	case *file != "" && (len(names) > 0 || *pattern != ""):
		return usagef("give scenario names (or -run) or --file, not both")
	case *file != "":
		s, rec, err := loadScenario(*file)
		if err != nil {
			return err
		}
		list, recorded = []*scenario.Scenario{s}, rec
	default:
		if list, err = selectScenarios(names, *pattern); err != nil {
			return err
		}
	}
	if shard.N > 1 {
		var mine []*scenario.Scenario
		for i, s := range list {
			if shard.Has(i) {
				mine = append(mine, s)
			}
		}
		if len(mine) == 0 {
			return usagef("shard %s of the %d scenarios selected holds none: nothing to run", shard, len(list))
		}
		list = mine
	}
	o, err := harnessOptions()
	if err != nil {
		return err
	}
	o.Artifacts, o.RecordAll, o.Bug, o.Impl, o.NoJumps = *artifacts, *record, *bug, *impl, *noJumps
	if recorded != nil {
		o.Seed = recorded.Seed
		if *bug == "" {
			o.Bug = recorded.Bug
		}
		if *impl == "" && recorded.Impl != "" {
			if _, err := peers.Lookup(recorded.Impl); err != nil {
				return usagef("the run was recorded against the relay %s, which is not in the registry: replay it with outboxchaos peers --relay-cmd CMD --relay-name %s --cases %s --seed %d",
					recorded.Impl, recorded.Impl, recorded.Scenario, recorded.Seed)
			}
			o.Impl = recorded.Impl
		}
	}
	if *seed != 0 {
		o.Seed = *seed
	}
	if o.Bug != "" && !canary.Known(o.Bug) {
		return usagef("unknown canary %q (known: %s)", o.Bug, strings.Join(canary.Names, ", "))
	}
	ci := ciOutput{junit: *junit}
	if *jsonOut {
		ci.json = stdout
	}
	if err := ci.preflight(ctx, o); err != nil {
		return err
	}
	defer keepSchemas(&o, *fresh, stderr)()
	text := stdout
	if *jsonOut {
		text = io.Discard
	}
	var results []scenarios.Result
	count := map[scenarios.Outcome]int{}
	start := time.Now()
	for _, s := range list {
		if ctx.Err() != nil {
			break // interrupted: the scenarios not started are not run
		}
		if !*quiet {
			fmt.Fprintf(text, "=== %s (design row %s)\n    %s\n    fault:    %s\n    expected: %s\n", s.Name, s.Row, s.Description, s.Fault, s.Outcome)
		}
		res := scenarios.Run(ctx, s, o)
		results = append(results, res)
		count[res.Outcome()]++
		if !*quiet {
			printResult(text, res, *verbose)
		}
		fmt.Fprintln(text, verdictLine(res))
		if res.Artifacts != "" {
			fmt.Fprintf(text, "    artifacts: %s\n", res.Artifacts)
		}
		if recorded != nil {
			fmt.Fprintln(text, compareRecorded(*recorded, res))
		}
		if !*quiet {
			// The verdict in words, on a line of its own: the VERDICT
			// line and its indented lines keep the form tools read.
			fmt.Fprintln(text, res.InWords())
		}
		if *jsonOut {
			if err := writeJSONResult(stdout, res); err != nil {
				return err
			}
		}
	}
	if len(list) > 1 || len(results) < len(list) {
		fmt.Fprintf(text, "%d scenarios: %d passed, %d failed, %d not judged (ERROR)%s in %.1fs\n", len(list),
			count[scenarios.OutcomePass], count[scenarios.OutcomeFail], count[scenarios.OutcomeError],
			notRun(len(list)-len(results)), time.Since(start).Seconds())
	}
	var outs []scenarios.Outcome
	for _, r := range results {
		outs = append(outs, r.Outcome())
	}
	if p, ok := interruption(ctx, len(list)-len(results), len(list), "scenarios"); ok {
		// The machine-readable outputs say so too, not only stderr.
		if err := ci.writeProblem(p, results, time.Since(start)); err != nil {
			return err
		}
	} else if *junit != "" {
		if err := writeJUnit(*junit, results, time.Since(start)); err != nil {
			return err
		}
	}
	return outcomeErr(scenarios.Worst(outs...))
}

func notRun(n int) string {
	if n == 0 {
		return ""
	}
	return fmt.Sprintf(", %d not run", n)
}

// selectScenarios turns names ("all": the catalogue; none: the catalogue
// when a pattern is given) and a -run pattern into the scenarios to run.
func selectScenarios(names []string, pattern string) ([]*scenario.Scenario, error) {
	var re *regexp.Regexp
	if pattern != "" {
		var err error
		if re, err = regexp.Compile(pattern); err != nil {
			return nil, usagef("-run %q: %v", pattern, err)
		}
	}
	if len(names) == 0 && re == nil {
		return nil, usagef("want scenario names, all, -run REGEX or --file\n"+
			"usage: outboxchaos scenario run NAME…|all|-run REGEX|--file FILE [flags]  (scenario run -h: the flags)\n%s", validNames())
	}
	if len(names) == 0 {
		names = []string{"all"}
	}
	var list []*scenario.Scenario
	seen := map[string]bool{}
	add := func(s *scenario.Scenario) {
		if !seen[s.Name] && (re == nil || re.MatchString(s.Name)) {
			seen[s.Name] = true
			list = append(list, s)
		}
	}
	for _, n := range names {
		if n == "all" {
			for _, s := range catalogue.Named() {
				add(s)
			}
			continue
		}
		s, ok := catalogue.Lookup(n)
		if !ok {
			s, ok = catalogue.LookupPeerCase(n)
		}
		if !ok {
			return nil, usagef("unknown scenario %q\n%s", n, validNames())
		}
		add(s)
	}
	if len(list) == 0 {
		return nil, usagef("-run %q matches no scenario of the selection", pattern)
	}
	return list, nil
}

// validNames lists the scenario names a command takes, one a line, to
// follow the reason of a usage error.
func validNames() string {
	var b strings.Builder
	b.WriteString("valid scenario names:")
	for _, n := range append(catalogue.Names(), "all") {
		b.WriteString("\n  " + n)
	}
	return b.String()
}

func verdictLine(r scenarios.Result) string {
	if r.NotJudged != nil {
		return fmt.Sprintf("VERDICT ERROR %s (row %s) seed=%d %.1fs: not judged: %s", r.Name, r.Row, r.Seed, r.Duration.Seconds(),
			strings.ReplaceAll(r.NotJudged.Error(), "\n", "\n    "))
	}
	line := fmt.Sprintf("VERDICT %s %s (row %s) seed=%d %.1fs: %s", r.Outcome(), r.Name, r.Row, r.Seed, r.Duration.Seconds(), r.Verdict)
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
	for _, l := range scenarios.Timeline(r, verbose) {
		fmt.Fprintln(w, l)
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
