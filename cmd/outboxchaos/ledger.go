//go:build !pod

package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/outboxchaos/outboxchaos/reports"
)

// ledgerUsage is the ledger command's line, for its help and usage errors.
const ledgerUsage = "merge [--out FILE] LEDGER…"

// runLedger folds exploration ledgers: `ledger merge` reads the ledgers a
// CI matrix's shards wrote (explore --shard K/N --ledger …, one per
// runner) and writes one ledger in which each budget's shards are one
// entry with the budget's totals.
func runLedger(_ context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 || args[0] != "merge" {
		if len(args) > 0 && (args[0] == "-h" || args[0] == "--help" || args[0] == "-help" || args[0] == "help") {
			args = []string{"merge", "-h"}
		} else {
			return usagef("want the sub-command merge (usage: outboxchaos ledger %s)", ledgerUsage)
		}
	}
	fs := subcommandFlags("ledger merge", "[--out FILE] LEDGER…", "fold the ledgers of an exploration's shards into one: each budget's shards become one entry with its totals", stderr)
	out := fs.String("out", "-", "where to write the merged ledger (-: standard output)")
	if err := parseFlags(fs, args[1:]); err != nil {
		return err
	}
	if fs.NArg() == 0 {
		return usagef("name the ledgers to merge (usage: outboxchaos ledger %s)", ledgerUsage)
	}
	var all []reports.Exploration
	for _, path := range fs.Args() {
		es, err := reports.ReadLedgerFile(path)
		if err != nil {
			return usagef("%v", err)
		}
		all = append(all, es...)
	}
	merged, err := reports.MergeShards(all)
	if err != nil {
		return usagef("%v", err)
	}
	if *out == "-" {
		return reports.WriteLedgerEntries(stdout, merged)
	}
	if err := os.MkdirAll(filepath.Dir(*out), 0o755); err != nil {
		return fmt.Errorf("create the merged ledger's folder: %w", err)
	}
	f, err := os.Create(*out)
	if err != nil {
		return fmt.Errorf("create the merged ledger: %w", err)
	}
	if err := reports.WriteLedgerEntries(f, merged); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("write the merged ledger %s: %w", *out, err)
	}
	fmt.Fprintf(stderr, "ledger %s: %d entries from %d (%d ledgers)\n", *out, len(merged), len(all), fs.NArg())
	return nil
}
