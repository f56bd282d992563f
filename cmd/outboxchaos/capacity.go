//go:build !pod

package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/outboxchaos/outboxchaos/reports"
	"github.com/outboxchaos/outboxchaos/sim"
)

// runCapacity answers the capacity questions by simulating evenings and
// days, and writes the tables.
func runCapacity(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := subcommandFlags("simulate capacity", "[flags]", "answer the capacity questions by simulating evenings and days; write artifacts/CAPACITY.md (make capacity: reports/)", stderr)
	seed := fs.Int64("seed", 1, "seed of the workloads and fault plans")
	out := fs.String("out", "artifacts/CAPACITY.md", "where to write the tables, and their figures as JSON beside them (make capacity: reports/CAPACITY.md, the committed page)")
	repeat := fs.Int("repeat", 3, "runs of each ERROR-rate row, with seeds seed, seed+1, …")
	adRepeat := fs.Int("ad-repeat", 3, "runs of each draining advertising row (each is a simulated evening: minutes of wall time)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usagef("usage: outboxchaos simulate capacity [--seed N] [--repeat N] [--ad-repeat N] [--out FILE]")
	}
	if *repeat < 1 || *adRepeat < 1 {
		return usagef("--repeat %d, --ad-repeat %d: each row needs at least one run", *repeat, *adRepeat)
	}
	o, err := simOptions(ctx, *seed, 0, true, stderr)
	if err != nil {
		return err
	}
	c, err := sim.RunCapacity(ctx, o, *repeat, *adRepeat, func(s string) { fmt.Fprintln(stdout, s) })
	if err != nil {
		return err
	}
	command := fmt.Sprintf("outboxchaos simulate capacity --seed %d --repeat %d --ad-repeat %d", *seed, *repeat, *adRepeat)
	if err := writeCapacityPage(*out, c, command); err != nil {
		return err
	}
	js, _ := json.MarshalIndent(c, "", "  ")
	if err := os.WriteFile(strings.TrimSuffix(*out, ".md")+".json", append(js, '\n'), 0o644); err != nil {
		return fmt.Errorf("write capacity figures: %w", err)
	}
	fmt.Fprintf(stdout, "capacity tables: %s (%s)\n", *out, c.Wall.Round(time.Second))
	return nil
}

// writeCapacityPage writes the capacity page of c, made by command, to
// path, creating its folder.
func writeCapacityPage(path string, c *sim.Capacity, command string) error {
	if err := reports.WritePage(path, []byte(sim.CapacityPage(c, command, reports.NewStamp()))); err != nil {
		return err
	}
	return nil
}
