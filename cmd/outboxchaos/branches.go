//go:build !pod

package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"strings"

	"github.com/outboxchaos/outboxchaos/branches"
	"github.com/outboxchaos/outboxchaos/reports"
)

// modulePath is this program's module, as coverage profiles name files.
func modulePath() string {
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Path != "" {
		return bi.Main.Path
	}
	return "github.com/outboxchaos/outboxchaos"
}

// coverDir prepares --cover-dir: an absolute path to a folder that holds
// no coverage data yet ("" stays "": no map).
func coverDir(dir string) (string, error) {
	if dir == "" {
		return "", nil
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", fmt.Errorf("--cover-dir: %w", err)
	}
	if err := os.MkdirAll(abs, 0o755); err != nil {
		return "", fmt.Errorf("--cover-dir: %w", err)
	}
	es, err := os.ReadDir(abs)
	if err != nil {
		return "", fmt.Errorf("--cover-dir: %w", err)
	}
	if len(es) > 0 {
		return "", usagef("--cover-dir %s is not empty: the map would mix in earlier runs' counters", dir)
	}
	if _, err := os.Stat("system"); err != nil {
		return "", usagef("--cover-dir needs the module's source: run from the repository's root (no ./system here)")
	}
	return abs, nil
}

// systemBranches finds the error branches of system/ in the source.
func systemBranches() ([]branches.Branch, error) {
	return branches.Find(".", modulePath(), "system", "testenv")
}

// errorBranches merges the pods' coverage counters in dir (`go tool
// covdata textfmt`) and maps the error branches of system/ they reached.
func errorBranches(ctx context.Context, dir string) (*branches.Map, error) {
	bs, err := systemBranches()
	if err != nil {
		return nil, err
	}
	return reachIn(ctx, dir, bs)
}

// reachIn maps which of bs the counters in dir reached.
func reachIn(ctx context.Context, dir string, bs []branches.Branch) (*branches.Map, error) {
	prof := filepath.Join(dir, "profile.txt")
	out, err := exec.CommandContext(ctx, "go", "tool", "covdata", "textfmt", "-i", dir, "-o", prof).CombinedOutput()
	if err != nil {
		return nil, fmt.Errorf("merge the pods' coverage in %s (go tool covdata): %w: %s", dir, err, strings.TrimSpace(string(out)))
	}
	f, err := os.Open(prof)
	if err != nil {
		return nil, fmt.Errorf("read merged coverage: %w", err)
	}
	defer f.Close()
	ps, err := branches.ReadProfile(f)
	if err != nil {
		return nil, err
	}
	if len(ps) == 0 {
		return nil, fmt.Errorf("the pods wrote no coverage to %s: run a binary built with -cover (make cover-bin)", dir)
	}
	m := branches.Reach(bs, ps)
	if rs, err := branches.Reasons(); err == nil {
		_ = m.Explain(rs) // a stale entry fails branches.TestReasonsMatchSource, not the run
	}
	return m, nil
}

// printBranches prints the map's totals and each package's: what these
// runs reached (m.Earlier, what earlier runs reached, is not printed).
func printBranches(w io.Writer, m *branches.Map) {
	m2 := *m
	m2.Earlier = nil
	m = &m2
	r, n := m.Totals()
	open, explained := 0, 0
	for _, p := range m.ByPackage() {
		open += len(p.Open)
		explained += len(p.Explained)
	}
	fmt.Fprintf(w, "error branches of system/ reached: %d of %d (%d not reached with a reason in %s, %d open)\n", r, n, explained, branches.ReasonsFile, open)
	for _, p := range m.ByPackage() {
		fmt.Fprintf(w, "  %-50s %3d of %3d, %3d with a reason, %3d open\n", strings.TrimPrefix(p.Pkg, modulePath()+"/"), p.Reached, p.Total, len(p.Explained), len(p.Open))
	}
}

// printEver prints what m's runs and every exploration of the ledger t
// that named its branches reached between them (the report's union),
// and what was never reached.
func printEver(w io.Writer, m *branches.Map, t reports.LedgerTotals) {
	m2 := *m
	m2.Earlier = nil
	m = &m2
	gone := m.AddEarlier(t.EverKeys())
	ever, total, explained, open := 0, 0, 0, 0
	for _, p := range m.ByPackage() {
		ever += p.Ever
		total += p.Total
		explained += len(p.Explained)
		open += len(p.Open)
	}
	fmt.Fprintf(w, "error branches of system/ reached ever (these runs and %d explorations of the ledger that named theirs; %d of their branches no longer in the source): %d of %d (%d never reached, with a reason; %d open)\n",
		t.BranchRuns, len(gone), ever, total, explained, open)
}
