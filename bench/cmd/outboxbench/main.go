// Command outboxbench runs the throughput benchmark of package bench against
// the local PostgreSQL and RabbitMQ (or OUTBOXCHAOS_PG_URL and
// OUTBOXCHAOS_AMQP_URL), prints the table and the machine-readable key lines
// to stdout, progress to stderr, and writes artifacts/PERFORMANCE.md (make
// bench writes the committed reports/PERFORMANCE.md with -out).
//
//	go run ./bench/cmd/outboxbench                 # make bench
//	go run ./bench/cmd/outboxbench -quick          # make bench-quick
//	go run ./bench/cmd/outboxbench -n 20000 -out '' -only 'relay|raw.publish'
//	go run ./bench/cmd/outboxbench -only relay.r1.b50 -cpuprofile cpu.out
//
// Exit codes: 0 success, 1 a measurement or the setup failed, 2 usage.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"regexp"
	"runtime/pprof"
	"syscall"

	"github.com/outboxchaos/outboxchaos/bench"
	"github.com/outboxchaos/outboxchaos/reports"
	"github.com/outboxchaos/outboxchaos/system/config"
)

func main() {
	bench.RunChildIfRequested()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	defaults := config.Default()
	if err := defaults.FromEnv(); err != nil {
		fmt.Fprintf(stderr, "outboxbench: %v\n", err)
		return 2
	}
	fs := flag.NewFlagSet("outboxbench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	quick := fs.Bool("quick", false, "small sizes for CI (well under a minute)")
	n := fs.Int("n", 0, "backlog rows per relay measurement; the raw publish and relay SQL sizes follow it (default 30000, or 4000 with -quick)")
	out := fs.String("out", "artifacts/PERFORMANCE.md", "write the Markdown report here ('' to skip; make bench: reports/PERFORMANCE.md, the committed page)")
	only := fs.String("only", "", "run only the measurements whose ID matches this regular expression")
	cpuProfile := fs.String("cpuprofile", "", "write a CPU profile of this process to the file")
	pgURL := fs.String("pg-url", defaults.PGURL, "PostgreSQL URL (env OUTBOXCHAOS_PG_URL)")
	amqpURL := fs.String("amqp-url", defaults.AMQPURL, "RabbitMQ URL (env OUTBOXCHAOS_AMQP_URL)")
	seedN := fs.Int("seed-n", 0, "backlog rows for the seed-style relay (default 2000, or 300 with -quick)")
	workerN := fs.Int("worker-n", 0, "messages for the worker at 0 ms vendor latency (default 2000, or 300 with -quick)")
	memDrain := fs.Int("mem-drain", 0, "rows the relay child publishes from the memory backlog (default 30000, or 4000 with -quick)")
	peerDir := fs.String("peers", "", "also measure the peer relays' binaries in this folder (make peer-bins; '' to skip)")
	peerN := fs.Int("peer-n", 5000, "backlog rows per peer relay measurement")
	exploreBin := fs.String("explore", "", "also measure what random schedules cost, with this outboxchaos binary as the pods (make build; '' to skip)")
	exploreN := fs.Int("explore-n", 12, "random schedules for -explore, run one at a time")
	exploreSeed := fs.Int64("explore-seed", 1, "seed of the random schedules for -explore")
	auditBin := fs.String("audit", "", "also measure the audit of a generated month, with this outboxchaos binary (make build; '' to skip)")
	auditN := fs.Int("audit-n", 0, "outbox rows of the month for -audit (default 1000000, or 20000 with -quick)")
	before := fs.String("before", "", "an earlier build's page of this benchmark, written minutes before on this machine: show its figures beside this run's (a 'before and after' table)")
	memBacklog := fs.Int("mem-backlog", 0, "PENDING rows for the memory measurement and EXPLAIN (default 1000000, or 100000 with -quick)")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "outboxbench: unexpected arguments %q\n", fs.Args())
		return 2
	}
	if *exploreN < 1 {
		fmt.Fprintln(stderr, "outboxbench: -explore-n must be at least 1")
		return 2
	}
	var was *bench.Before
	if *before != "" {
		var err error
		if was, err = bench.ReadBefore(*before); err != nil {
			fmt.Fprintf(stderr, "outboxbench: -before: %v\n", err)
			return 2
		}
	}
	sizes := bench.DefaultSizes(*quick, *n)
	for _, o := range []struct {
		v   int
		dst *int
	}{{*seedN, &sizes.SeedRows}, {*workerN, &sizes.Worker0}, {*memBacklog, &sizes.MemBacklog}, {*memDrain, &sizes.MemDrain}} {
		if o.v < 0 {
			fmt.Fprintln(stderr, "outboxbench: sizes must not be negative")
			return 2
		}
		if o.v > 0 {
			*o.dst = o.v
		}
	}
	sizes.MemDrain = min(sizes.MemDrain, sizes.MemBacklog)
	opts := bench.Options{PGURL: *pgURL, AMQPURL: *amqpURL, Quick: *quick, Sizes: sizes, Progress: stderr}
	if *only != "" {
		re, err := regexp.Compile(*only)
		if err != nil {
			fmt.Fprintf(stderr, "outboxbench: -only: %v\n", err)
			return 2
		}
		opts.Only = re
	}
	if *cpuProfile != "" {
		f, err := os.Create(*cpuProfile)
		if err != nil {
			fmt.Fprintf(stderr, "outboxbench: %v\n", err)
			return 1
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			fmt.Fprintf(stderr, "outboxbench: start CPU profile: %v\n", err)
			return 1
		}
		defer pprof.StopCPUProfile()
	}
	rep, err := bench.Run(ctx, opts)
	if rep != nil {
		rep.Before = was
		fmt.Fprintln(stdout)
		fmt.Fprint(stdout, rep.Text())
	}
	if err != nil {
		fmt.Fprintf(stderr, "outboxbench: %v\n", err)
		return 1
	}
	if *exploreBin != "" {
		rep.Explore = measureExplore(ctx, *exploreBin, *exploreN, *exploreSeed, *pgURL, *amqpURL, stderr)
	}
	if *auditBin != "" {
		rows := *auditN
		if rows <= 0 {
			rows = 1_000_000
			if *quick {
				rows = 20_000
			}
		}
		rep.Audit = measureAudit(ctx, *auditBin, rows, *pgURL, *amqpURL, stderr)
	}
	if *peerDir != "" {
		rep.Peers, rep.PeerRows = measurePeers(ctx, *peerDir, *peerN, *pgURL, *amqpURL, stderr), *peerN
		if rep.Peers == nil {
			rep.Peers = []bench.PeerRate{}
		}
	}
	if ctx.Err() != nil {
		fmt.Fprintf(stderr, "outboxbench: interrupted: %s left as it was\n", *out)
		return 1
	}
	rep.Finish()
	md := rep.Markdown()
	fmt.Fprint(stdout, rep.Appendix())
	if *out != "" {
		if err := reports.WritePage(*out, []byte(md)); err != nil {
			fmt.Fprintf(stderr, "outboxbench: write report: %v\n", err)
			return 1
		}
		fmt.Fprintf(stderr, "[bench] wrote %s\n", *out)
	}
	if rep.Failed() {
		fmt.Fprintln(stderr, "outboxbench: some measurements failed (see the table)")
		return 1
	}
	return 0
}
