package main

import (
	"context"
	"errors"
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
	"github.com/outboxchaos/outboxchaos/system/config"
)

// runPeers runs the peer cases against every relay under test (issue 12)
// and writes the matrix.
func runPeers(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("outboxchaos peers", flag.ContinueOnError)
	fs.SetOutput(stderr)
	out := fs.String("out", "reports/PEERS.md", "where to write the report (\"\": print the matrix only)")
	implList := fs.String("impls", "all", "comma-separated implementations ("+strings.Join(peers.Names(), ", ")+")")
	caseList := fs.String("cases", "all", "comma-separated peer cases")
	seed := fs.Int64("seed", 0, "seed for every run (0: from the time)")
	artifacts := fs.String("artifacts", "artifacts", "directory for the records of failed runs")
	list := fs.Bool("list", false, "list the implementations and cases, and exit")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return usageError{err}
	}
	impls, err := pickImpls(*implList)
	if err != nil {
		return err
	}
	cases, err := pickCases(*caseList)
	if err != nil {
		return err
	}
	if *list {
		fmt.Fprintln(stdout, "implementations:", strings.Join(impls, " "))
		for _, s := range cases {
			fmt.Fprintf(stdout, "  %-26s %s\n", s.Name, s.Description)
		}
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
	rep := reports.Peers{Cases: cases, Findings: reports.PeerFindings, Command: "make peers"}
	if rep.Env, err = environment(ctx, o); err != nil {
		return err
	}
	violations := 0
	for _, impl := range impls {
		settings, err := implSettings(ctx, bin, impl)
		if err != nil {
			return err
		}
		rep.Impls = append(rep.Impls, reports.PeerImpl{Name: impl, Settings: settings})
		for _, s := range cases {
			c := reports.PeerCell{Impl: impl, Case: s.Name}
			if ok, why := scenarios.PeerCaseApplies(s.Name, impl); !ok {
				c.NA = why
				rep.Cells = append(rep.Cells, c)
				fmt.Fprintf(stdout, "n/a     %-26s %-26s %s\n", impl, s.Name, why)
				continue
			}
			ro := o
			ro.Impl = impl
			c.Result = scenarios.Run(ctx, s, ro)
			rep.Cells = append(rep.Cells, c)
			status := "PASS"
			if c.Violation() {
				status = "FAIL"
				violations++
			}
			fmt.Fprintf(stdout, "%-7s %-26s %-26s %.1fs dup@broker=%d %s\n", status, impl, s.Name, c.Result.Duration.Seconds(), c.BrokerCopies(), c.Result.Verdict)
			if c.Result.Err != nil {
				fmt.Fprintf(stdout, "        %s\n", strings.ReplaceAll(c.Result.Err.Error(), "\n", "\n        "))
			}
		}
	}
	if *out != "" {
		if err := writeFile(*out, rep.Write); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "wrote %s\n", *out)
	}
	fmt.Fprintf(stdout, "%d violations\n", violations)
	return nil
}

func pickImpls(s string) ([]string, error) {
	var all []string
	for _, i := range peers.Impls {
		all = append(all, i.Name)
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

func pickCases(s string) ([]*scenarios.Scenario, error) {
	all := scenarios.PeerCases()
	if s == "" || s == "all" {
		return all, nil
	}
	var out []*scenarios.Scenario
	for _, p := range strings.Split(s, ",") {
		c, ok := scenarios.LookupPeerCase(p)
		if !ok {
			return nil, usagef("unknown peer case %q", p)
		}
		out = append(out, c)
	}
	return out, nil
}

// implSettings asks a peer's binary for its settings; ours are the relay's
// configuration in the compressed scenarios.
func implSettings(ctx context.Context, bin, impl string) ([]string, error) {
	name, err := peers.Binary(impl)
	if err != nil {
		return nil, usageError{err}
	}
	if name == "" {
		c := config.Default()
		return []string{
			"relay=system/relay (this repository)\tour own relay through the same seam",
			"claim=one committed UPDATE … FOR UPDATE SKIP LOCKED, lease claimed_by/claimed_until\tSPEC §3",
			fmt.Sprintf("batch-size=%d\tSPEC §3", c.BatchSize),
			"lease=1.5s (15 min compressed)\tthe scenarios' compression",
			"confirm-timeout=600ms (5 s compressed)\tthe scenarios' compression",
			"relay-interval=100ms (5 min compressed)\tthe scenarios' compression",
			"marks=conditional: WHERE status='PUBLISHING' AND claimed_by=me\tSPEC §3",
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

// writeFile writes what write renders to path.
func writeFile(path string, write func(io.Writer) error) error {
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
	return nil
}
