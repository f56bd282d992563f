//go:build !pod

package main

import (
	"cmp"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"

	"github.com/outboxchaos/outboxchaos/peers"
	"github.com/outboxchaos/outboxchaos/reports"
	"github.com/outboxchaos/outboxchaos/scenarios"
	"github.com/outboxchaos/outboxchaos/scenarios/catalogue"
	"github.com/outboxchaos/outboxchaos/scenarios/scenario"
	"github.com/outboxchaos/outboxchaos/system/config"
)

// runPeers runs the peer cases against every relay under test
// and writes the matrix.
func runPeers(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := subcommandFlags("peers", "[flags]", commands["peers"].summary, stderr)
	out := fs.String("out", "artifacts/PEERS.md", "where to write the report (\"\": print the matrix only; make peers: reports/PEERS.md, the committed page)")
	implList := fs.String("impls", "all", "comma-separated implementations ("+strings.Join(peers.Names(), ", ")+")")
	caseList := fs.String("cases", "all", "comma-separated peer cases")
	seed := fs.Int64("seed", 0, "seed for every run (0: from the time)")
	artifacts := fs.String("artifacts", "artifacts", "directory for the records of failed runs")
	list := fs.Bool("list", false, "list the implementations and cases, and exit")
	verbose := fs.Bool("v", false, "after each run, print its whole timeline (every line every pod wrote, the relay under test's own output among them), its faults and final state")
	save := fs.String("save", "artifacts/peers/matrix.json", "where to save the runs' results (\"\": nowhere; make peers: reports/peers/matrix.json, the committed one)")
	into := fs.String("into", "", "add the runs to this saved matrix.json (replacing the cells run again) instead of starting afresh")
	from := fs.String("from", "", "render the report from a saved matrix.json (with the current findings) instead of running")
	relayCmd := fs.String("relay-cmd", "", "judge a relay given as a command line (docs/relay-contract.md; split on spaces), alone unless --impls names others too")
	relayName := fs.String("relay-name", "", "the name of the --relay-cmd relay in the matrix")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *relayCmd != "" {
		if *relayName == "" {
			return usagef("--relay-cmd needs --relay-name")
		}
		p, err := peers.Describe(ctx, *relayName, strings.Fields(*relayCmd))
		if err != nil {
			return err
		}
		if err := peers.Add(p); err != nil {
			return usageError{err}
		}
		// Alone, and printed only, unless --impls, --out or --save say
		// otherwise (make peers: --impls all --out reports/PEERS.md).
		set := map[string]bool{}
		fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
		switch {
		case !set["impls"]:
			*implList = p.Name
		case *implList != "all":
			*implList += "," + p.Name
		}
		if !set["out"] {
			*out = ""
		}
		if !set["save"] {
			*save = ""
		}
	}
	impls, err := pickImpls(*implList)
	if err != nil {
		return err
	}
	cases, err := pickCases(*caseList)
	if err != nil {
		return err
	}
	if !*list && *from == "" {
		if err := someCellApplies(impls, cases); err != nil {
			return err
		}
	}
	if *list {
		fmt.Fprintln(stdout, "implementations:", strings.Join(impls, " "))
		for _, s := range cases {
			fmt.Fprintf(stdout, "  %-26s %s\n", s.Name, s.Description)
		}
		return nil
	}
	if *from != "" {
		rep, err := loadMatrix(*from)
		if err != nil {
			return err
		}
		if err := writeFile(*out, rep.Write); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "wrote %s from %s\n", *out, *from)
		return nil
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
	rep := reports.Peers{Findings: reports.PeerFindings, Command: "make peers"}
	if *into != "" {
		if rep, err = loadMatrix(*into); err != nil {
			return err
		}
	}
	rep.Cases = mergeCases(rep.Cases, cases)
	if rep.Env, err = environment(ctx, o); err != nil {
		return err
	}
	violations, errored := 0, 0
	for _, impl := range impls {
		if ctx.Err() != nil {
			break
		}
		p, err := peers.Lookup(impl)
		if err != nil {
			return usageError{err}
		}
		settings, err := implSettings(ctx, bin, p)
		if err != nil {
			return err
		}
		rep.SetImpl(reports.PeerImpl{Name: impl, Settings: settings, Features: p.Features, Deadlines: p.Deadlines, Command: strings.Join(p.Command, " ")})
		for _, s := range cases {
			if ctx.Err() != nil {
				break
			}
			c := reports.PeerCell{Impl: impl, Case: s.Name}
			if ok, why := catalogue.PeerCaseApplies(s, p); !ok {
				c.NA = why
				rep.SetCell(c)
				// Saved as a run is: under --into, a cell that no longer
				// applies replaces the one run before.
				if err := saveMatrix(*save, rep); err != nil {
					return err
				}
				fmt.Fprintf(stdout, "n/a     %-26s %-26s %s\n", impl, s.Name, why)
				continue
			}
			ro := o
			ro.Impl = impl
			res := scenarios.Run(ctx, s, ro)
			if ctx.Err() != nil {
				// Interrupted: a cell nobody let finish is not saved
				// (it would replace a measured one under --into).
				break
			}
			c = reports.NewPeerCell(impl, s.Name, res)
			rep.SetCell(c)
			if err := saveMatrix(*save, rep); err != nil {
				return err
			}
			status := "PASS"
			switch {
			case c.NotJudged != "":
				status = "ERROR"
				errored++
			case c.Violation():
				status = "FAIL"
				violations++
			}
			if *verbose {
				printResult(stdout, res, true)
			}
			fmt.Fprintf(stdout, "%-7s %-26s %-26s %.1fs dup@broker=%d faults_fired=%d/%d %s\n", status, impl, s.Name, c.Seconds, c.BrokerCopies(),
				len(c.Fired), len(c.Fired)+len(c.Unfired), c.Verdict)
			for _, why := range []string{c.Err, c.NotJudged} {
				if why != "" {
					fmt.Fprintf(stdout, "        %s\n", strings.ReplaceAll(why, "\n", "\n        "))
				}
			}
		}
	}
	if ctx.Err() != nil {
		// As report does: a page of runs nobody let finish is not written.
		saved := ""
		if *save != "" {
			saved = "; the cells that finished are saved in " + *save
		}
		return fmt.Errorf("%w: interrupted: %s left as it was%s", errNotJudged, cmp.Or(*out, "the report"), saved)
	}
	if *out != "" {
		if err := writeFile(*out, rep.Write); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "wrote %s\n", *out)
	}
	fmt.Fprintf(stdout, "%d violations, %d not judged (ERROR)\n", violations, errored)
	// As every judging command: a broken contract outweighs a cell not
	// judged, so a CI job that runs a relay through the cases fails on
	// either.
	switch {
	case violations > 0:
		return errVerdictFailed
	case errored > 0:
		return errNotJudged
	}
	return nil
}

// someCellApplies is a usage error when no case of cases applies to any
// of impls: every cell would be n/a, and the run would judge nothing.
func someCellApplies(impls []string, cases []*scenario.Scenario) error {
	for _, impl := range impls {
		p, err := peers.Lookup(impl)
		if err != nil {
			return usageError{err}
		}
		for _, s := range cases {
			if ok, _ := catalogue.PeerCaseApplies(s, p); ok {
				return nil
			}
		}
	}
	return usagef("no case of the selection applies to %s: every cell would be n/a, nothing to run", strings.Join(impls, ", "))
}

// loadMatrix reads a saved matrix.json, with the current findings.
func loadMatrix(path string) (reports.Peers, error) {
	var rep reports.Peers
	b, err := os.ReadFile(path)
	if err != nil {
		return rep, fmt.Errorf("read saved matrix: %w", err)
	}
	if err := json.Unmarshal(b, &rep); err != nil {
		return rep, fmt.Errorf("decode %s: %w", path, err)
	}
	rep.Findings = reports.PeerFindings
	return rep, nil
}

// mergeCases returns the cases of have and add, in catalogue order.
func mergeCases(have, add []*scenario.Scenario) []*scenario.Scenario {
	want := map[string]bool{}
	for _, s := range append(append([]*scenario.Scenario(nil), have...), add...) {
		want[s.Name] = true
	}
	var out []*scenario.Scenario
	for _, s := range catalogue.PeerCases() {
		if want[s.Name] {
			out = append(out, s)
		}
	}
	return out
}

// saveMatrix saves the results so far (after every cell: an interrupted
// run keeps what it measured).
func saveMatrix(path string, rep reports.Peers) error {
	if path == "" {
		return nil
	}
	return writeJSON(path, rep, " ", "matrix")
}

// writeJSON writes v to path as indented JSON with a final newline; what
// names it in errors.
func writeJSON(path string, v any, indent, what string) error {
	b, err := json.MarshalIndent(v, "", indent)
	if err != nil {
		return fmt.Errorf("encode %s: %w", what, err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("create the %s's folder: %w", what, err)
	}
	if err := os.WriteFile(path, append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("write %s: %w", what, err)
	}
	return nil
}

func pickImpls(s string) ([]string, error) {
	var all []string
	for _, p := range peers.All() {
		all = append(all, p.Name)
	}
	if s == "" || s == "all" {
		return all, nil
	}
	var out []string
	for _, p := range strings.Split(s, ",") {
		if !slices.Contains(all, p) {
			return nil, usagef("unknown implementation %q (known: %s)", p, strings.Join(all, ", "))
		}
		out = append(out, p)
	}
	return out, nil
}

func pickCases(s string) ([]*scenario.Scenario, error) {
	all := catalogue.PeerCases()
	if s == "" || s == "all" {
		return all, nil
	}
	var out []*scenario.Scenario
	for _, p := range strings.Split(s, ",") {
		c, ok := catalogue.LookupPeerCase(p)
		if !ok {
			return nil, usagef("unknown peer case %q", p)
		}
		out = append(out, c)
	}
	return out, nil
}

// implSettings asks a peer's binary for its settings; a command-line
// relay's are those it declared; ours are the relay's configuration in
// the compressed scenarios.
func implSettings(ctx context.Context, bin string, p peers.Peer) ([]string, error) {
	if len(p.Command) > 0 {
		return p.Settings, nil
	}
	name, impl := p.Binary, p.Name
	if name == "" {
		c := config.Default()
		return []string{
			"relay=system/relay (this repository)\tour own relay through the same seam",
			"claim=one committed UPDATE … FOR UPDATE SKIP LOCKED, lease claimed_by/claimed_until\tdesign §3",
			fmt.Sprintf("batch-size=%d\tdesign §3", c.BatchSize),
			"lease=1.5s (15 min compressed)\tthe scenarios' compression",
			"confirm-timeout=600ms (5 s compressed)\tthe scenarios' compression",
			"relay-interval=100ms (5 min compressed)\tthe scenarios' compression",
			"marks=conditional: WHERE status='PUBLISHING' AND claimed_by=me\tdesign §3",
		}, nil
	}
	pb := filepath.Join(filepath.Dir(bin), name)
	cmd := exec.CommandContext(ctx, pb, "settings", "--impl", impl)
	b, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("%s settings (run make peer-bins): %w", pb, err)
	}
	return strings.Split(strings.TrimRight(string(b), "\n"), "\n"), nil
}

// writeFile writes what write renders to path, creating its folder.
func writeFile(path string, write func(io.Writer) error) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("create %s: %w", filepath.Dir(path), err)
	}
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("create %s: %w", path, err)
	}
	if err := write(f); err != nil {
		f.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if line := reports.InputsLine(filepath.Base(path)); line != "" {
		return appendTo(path, line)
	}
	return nil
}

// appendTo appends s to the file at path.
func appendTo(path, s string) error {
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		return fmt.Errorf("append to %s: %w", path, err)
	}
	if _, err := f.WriteString(s); err != nil {
		f.Close()
		return fmt.Errorf("append to %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("append to %s: %w", path, err)
	}
	return nil
}
