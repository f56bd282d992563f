// Command outboxchaos runs each part of the notification pipeline as its own
// process (migrate, enqueue, relay, worker, cleanup, reconcile, the fake
// vendor), a small end-to-end demo, and the fault-injection scenarios.
//
// Exit codes: 0 pass (or the command did its job), 1 a verdict found the
// contract broken, 2 usage or configuration error (a request that would
// run nothing, such as --checks 0, too), 3 not judged: the harness or a
// service it needs failed, or a signal (Ctrl-C, SIGTERM) ended the run,
// after its clean-up; 141 (128 + SIGPIPE, as a shell reports a process a
// closed pipe killed) when the reader of stdout or stderr went away
// (`… | head`): the command stops, cleans up and says nothing.
//
// The harness commands write their pages under artifacts/ unless --out
// (or --ledger, --save) says otherwise: only `make reports` and the make
// targets that regenerate one committed page write under reports/.
//
// One binary on purpose, pipeline commands and harness together: the
// harness starts its pods from its own executable (os.Executable), so a
// scenario always runs exactly the pipeline it was built with, with the
// canaries and crash points it arms, and a user builds and ships one file.
// The price is size, not behaviour: the binary is 43 MB, the pipeline's
// packages alone about 10 MB; the harness, Toxiproxy and gonum/plot are
// linked into `relay` and `worker` but do nothing there (their only init
// fills Toxiproxy's in-memory registry of toxics). Splitting would make every pod spawn find a second binary of
// the same build (as the peer relays do) for no change in what runs; a
// deployment that minds 33 MB can build its own main from system/app.
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

type command struct {
	summary string
	run     func(ctx context.Context, args []string, stdout, stderr io.Writer) error
	// service: a long-running pipeline process whose normal end is a
	// signal (exit 0 then, not 3).
	service bool
}

// commands are the process's commands: the pipeline's here, the
// harness's added by commands_harness.go in a full build. A build with the
// tag pod (make build: bin/outboxchaos-pod) has the pipeline's alone: the
// harness starts its pods from it, a binary a third of the size that
// starts in a third of the CPU.
var commands map[string]command

// addCommands adds cs to commands (each file's init adds its own, in
// whatever order the files' inits run).
func addCommands(cs map[string]command) {
	if commands == nil {
		commands = map[string]command{}
	}
	for name, c := range cs {
		commands[name] = c
	}
}

func init() {
	addCommands(map[string]command{
		"migrate":   {"create or update the schema (serialised with pg_advisory_lock)", runMigrate, false},
		"enqueue":   {"seed business rows and run the batch jobs (outbox insert-ignore)", runEnqueue, false},
		"relay":     {"run the outbox relay (--once for a single run)", runRelay, true},
		"worker":    {"consume the main queue and send through the vendor", runWorker, true},
		"cleanup":   {"turn SENDING rows older than the timeout into ERROR + alert (--once)", runCleanup, true},
		"reconcile": {"settle ERROR rows from the vendor's delivery report (--once; --reconcile-resend)", runReconcile, true},
		"vendor":    {"run the fake SMS vendor with its handset ledger and an alert sink", runVendor, true},
		"version":   {"print the module version, the commit it was built from and the Go version", runVersion, false},
		"help":      {"show this help, the flags of one command (help scenario run), or every pipeline setting (help settings)", nil, false},
	})
}

func main() {
	if err := armHooks(os.Stderr); err != nil {
		fmt.Fprintf(os.Stderr, "outboxchaos: %v\n", err)
		os.Exit(exitUsage)
	}
	// A write to a closed stdout or stderr returns EPIPE (pipeWatch ends
	// the run) instead of killing the process before its clean-up.
	signal.Ignore(syscall.SIGPIPE)
	ctx, cancel, stop := signalContext(context.Background(), func(msg string) { fmt.Fprintf(os.Stderr, "outboxchaos: %s\n", msg) })
	code := run(ctx, os.Args[1:], pipeWatch{os.Stdout, cancel}, pipeWatch{os.Stderr, cancel})
	stop()
	os.Exit(code)
}

// isHelp reports whether arg asks for help.
func isHelp(arg string) bool { return arg == "-h" || arg == "-help" || arg == "--help" }

// wantsHelp reports whether args ask for help before any "--".
func wantsHelp(args []string) bool {
	for _, a := range args {
		if a == "--" {
			return false
		}
		if isHelp(a) {
			return true
		}
	}
	return false
}

// run runs the command line and returns its exit code: exitBrokenPipe,
// whatever the command answered, once the reader of stdout or stderr went
// away.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	code := runArgs(ctx, args, stdout, stderr)
	if sig, ok := interrupted(ctx); ok && sig.sig == syscall.SIGPIPE {
		return exitBrokenPipe
	}
	return code
}

// runArgs runs the help or the command args ask for.
func runArgs(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		help(stdout)
		return exitUsage
	}
	if args[0] == "help" || isHelp(args[0]) {
		switch {
		case len(args) == 1:
			help(stdout)
			return exitPass
		case args[1] == "settings":
			settingsHelp(stdout, nil)
			return exitPass
		}
		if _, ok := commands[args[1]]; !ok || args[1] == "help" {
			fmt.Fprintf(stderr, "outboxchaos: no help on %q\n\n", args[1])
			help(stderr)
			return exitUsage
		}
		// help X Y… is X Y… -h.
		return run(ctx, append(append([]string(nil), args[1:]...), "-h"), stdout, stderr)
	}
	cmd, ok := commands[args[0]]
	if !ok || cmd.run == nil {
		fmt.Fprintf(stderr, "outboxchaos: unknown command %q\n\n", args[0])
		help(stderr)
		return exitUsage
	}
	if wantsHelp(args[1:]) {
		// Asked for, help is the answer: it goes to stdout (| less).
		stderr = stdout
	}
	err := cmd.run(ctx, args[1:], stdout, stderr)
	return exitCode(ctx, args[0], cmd, err, stderr)
}

// exitCode maps a command's error to its exit code, saying why on stderr.
func exitCode(ctx context.Context, name string, cmd command, err error, stderr io.Writer) int {
	var ue usageError
	if sig, ok := interrupted(ctx); ok && sig.sig == syscall.SIGPIPE {
		// The reader went away (`… | head`): as a process the pipe
		// killed, quietly; the run's clean-up is done.
		return exitBrokenPipe
	}
	if sig, ok := interrupted(ctx); ok && (err != nil || !cmd.service) {
		// Whatever the command answered, a signal stopped it: ERROR.
		if err != nil && err != errNotJudged && err != errVerdictFailed {
			fmt.Fprintf(stderr, "outboxchaos %s: %v\n", name, err)
		}
		fmt.Fprintf(stderr, "outboxchaos %s: interrupted by %s: not judged (ERROR)\n", name, sig)
		return exitNotJudged
	}
	switch {
	case err == nil, errors.Is(err, flag.ErrHelp):
		return exitPass
	case errors.As(err, &ue):
		fmt.Fprintf(stderr, "outboxchaos %s: %v\n", name, err)
		return exitUsage
	case errors.Is(err, errVerdictFailed):
		if err != errVerdictFailed {
			fmt.Fprintf(stderr, "outboxchaos %s: %v\n", name, err)
		}
		return exitViolated
	default:
		// Not a verdict: the command could not do its job (a service it
		// needs, a file, the harness itself).
		if err != errNotJudged {
			fmt.Fprintf(stderr, "outboxchaos %s: %v\n", name, err)
		}
		return exitNotJudged
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
	fmt.Fprintln(w, "\n`outboxchaos help <command>` (or <command> -h) shows a command's flags; `help scenario run` a sub-command's.")
	fmt.Fprintln(w, "Every pipeline setting is a flag and an environment variable, for example")
	fmt.Fprintln(w, "--pg-url / OUTBOXCHAOS_PG_URL, --amqp-url / OUTBOXCHAOS_AMQP_URL, --lease / OUTBOXCHAOS_LEASE;")
	fmt.Fprintln(w, "`outboxchaos help settings` lists them by component. Logs: OUTBOXCHAOS_LOG_FORMAT=text|json, OUTBOXCHAOS_LOG_LEVEL=info|debug.")
	fmt.Fprintln(w, "Fault hooks for child processes: OUTBOXCHAOS_KILLPOINT=name[:N][,...], OUTBOXCHAOS_FAILPOINT=name[:N][,...].")
	fmt.Fprintln(w, "Harness commands write under artifacts/ unless --out says otherwise; `make reports` regenerates the committed pages in reports/.")
	fmt.Fprintln(w, "\nExit codes: 0 pass, 1 contract violated, 2 usage (a request that would run nothing too), 3 not judged (a service or")
	fmt.Fprintln(w, "the harness failed, or a signal), 141 the reader of the output went away (`… | head`), quietly as SIGPIPE would.")
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
	fs.Usage = func() { pipelineUsage(fs, name) }
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
