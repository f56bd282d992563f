// Command outboxchaos runs each part of the notification pipeline as its own
// process (migrate, enqueue, relay, worker, cleanup, reconcile, the fake
// vendor), a small end-to-end demo, and the fault-injection scenarios.
//
// Exit codes: 0 success, 1 failure, 2 usage or configuration error.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sort"
	"strings"
	"syscall"

	"github.com/outboxchaos/outboxchaos/system/config"
)

// usageError marks errors that exit 2.
type usageError struct{ error }

func usagef(format string, args ...any) error { return usageError{fmt.Errorf(format, args...)} }

type command struct {
	summary string
	run     func(ctx context.Context, args []string, stdout, stderr io.Writer) error
}

var commands map[string]command

func init() {
	commands = map[string]command{
		"migrate":     {"create or update the schema (serialised with pg_advisory_lock)", runMigrate},
		"enqueue":     {"seed business rows and run the batch jobs (outbox insert-ignore)", runEnqueue},
		"relay":       {"run the outbox relay (--once for a single run)", runRelay},
		"worker":      {"consume the main queue and send through the vendor", runWorker},
		"cleanup":     {"turn SENDING rows older than the timeout into ERROR + alert (--once)", runCleanup},
		"reconcile":   {"settle ERROR rows from the vendor's delivery report (--once; --reconcile-resend)", runReconcile},
		"vendor":      {"run the fake SMS vendor with its handset ledger and an alert sink", runVendor},
		"demo":        {"run a small end-to-end batch in a scratch schema and print each notification", runDemo},
		"scenario":    {"list or run the named fault-injection scenarios", runScenario},
		"canary":      {"enable each deliberate bug in turn and check a scenario catches it", runCanary},
		"crashpoints": {"crash every process at every automatic crash point of a small workload and check the contract", runCrashpoints},
		"explore":     {"run a budget of random fault schedules (or one shard of it, or one again) and check the contract", runExplore},
		"report":      {"run scenarios, random schedules and canaries; write reports/RELIABILITY.md", runReport},
		"peers":       {"run every relay under test (ours, Watermill, River) through the peer cases; write reports/PEERS.md", runPeers},
		"simulate":    {"simulate a production day on the real pipeline, compressed; write reports/SIMULATION.md (capacity: the capacity table)", runSimulate},
		"help":        {"show this help, or the flags of one command", nil},
	}
}

func main() {
	if err := armHooks(os.Stderr); err != nil {
		fmt.Fprintf(os.Stderr, "outboxchaos: %v\n", err)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] == "help" || args[0] == "-h" || args[0] == "--help" {
		if len(args) > 1 {
			if _, ok := commands[args[1]]; ok {
				return run(ctx, []string{args[1], "-h"}, stdout, stderr)
			}
		}
		help(stdout)
		if len(args) == 0 {
			return 2
		}
		return 0
	}
	cmd, ok := commands[args[0]]
	if !ok || cmd.run == nil {
		fmt.Fprintf(stderr, "outboxchaos: unknown command %q\n\n", args[0])
		help(stderr)
		return 2
	}
	err := cmd.run(ctx, args[1:], stdout, stderr)
	var ue usageError
	switch {
	case err == nil:
		return 0
	case errors.Is(err, flag.ErrHelp):
		return 0
	case errors.As(err, &ue):
		fmt.Fprintf(stderr, "outboxchaos %s: %v\n", args[0], err)
		return 2
	case errors.Is(err, errVerdictFailed):
		return 1
	default:
		fmt.Fprintf(stderr, "outboxchaos %s: %v\n", args[0], err)
		return 1
	}
}

func help(w io.Writer) {
	fmt.Fprintln(w, "usage: outboxchaos <command> [flags]")
	fmt.Fprintln(w, "\ncommands:")
	names := make([]string, 0, len(commands))
	for n := range commands {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(w, "  %-10s %s\n", n, commands[n].summary)
	}
	fmt.Fprintln(w, "\nEvery pipeline setting is a flag and an environment variable, for example")
	fmt.Fprintln(w, "--pg-url / OUTBOXCHAOS_PG_URL, --amqp-url / OUTBOXCHAOS_AMQP_URL, --lease / OUTBOXCHAOS_LEASE.")
	fmt.Fprintln(w, "`outboxchaos help <command>` lists them. Logs: OUTBOXCHAOS_LOG_FORMAT=json, OUTBOXCHAOS_LOG_LEVEL=debug.")
	fmt.Fprintln(w, "Fault hooks for child processes: OUTBOXCHAOS_KILLPOINT=name[:N][,...], OUTBOXCHAOS_FAILPOINT=name[:N][,...].")
}

// flags builds a FlagSet with every config setting bound, defaults from the
// environment. Extra flags are added by the caller before parse.
func flags(name string, stderr io.Writer) (*flag.FlagSet, *config.Config, error) {
	cfg := config.Default()
	if err := cfg.FromEnv(); err != nil {
		return nil, nil, usageError{err}
	}
	fs := flag.NewFlagSet("outboxchaos "+name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	cfg.Bind(fs)
	return fs, &cfg, nil
}

// parseFlags parses args into fs: -h passes flag.ErrHelp through, any
// other parse error is a usage error (exit 2).
func parseFlags(fs *flag.FlagSet, args []string) error {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return usageError{err}
	}
	return nil
}

// parse parses args and validates the configuration.
func parse(fs *flag.FlagSet, cfg *config.Config, args []string) error {
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usagef("unexpected arguments: %s", strings.Join(fs.Args(), " "))
	}
	if err := cfg.Validate(); err != nil {
		return usageError{fmt.Errorf("invalid configuration: %w", err)}
	}
	return nil
}
