package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"strings"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/outboxchaos/outboxchaos/fakevendor"
	"github.com/outboxchaos/outboxchaos/history"
	"github.com/outboxchaos/outboxchaos/system/app"
	"github.com/outboxchaos/outboxchaos/system/broker"
	"github.com/outboxchaos/outboxchaos/system/cleanup"
	"github.com/outboxchaos/outboxchaos/system/config"
	"github.com/outboxchaos/outboxchaos/system/crashpoint"
	"github.com/outboxchaos/outboxchaos/system/jobs"
	"github.com/outboxchaos/outboxchaos/system/notification"
	"github.com/outboxchaos/outboxchaos/system/publisher"
	"github.com/outboxchaos/outboxchaos/system/relay"
	"github.com/outboxchaos/outboxchaos/system/sms"
	"github.com/outboxchaos/outboxchaos/system/worker"
)

// pipelineProc is what a pipeline command holds once its flags are parsed
// and validated and Postgres answers.
type pipelineProc struct {
	cfg   config.Config
	parts app.Parts
	pool  *pgxpool.Pool
}

// runPipeline is the one preamble of the pipeline commands: every setting
// bound as a flag (own adds the command's flags and returns a check run
// after parsing, or nil), parse and validate, the logger, clock, alert
// sender and Postgres pool opened, body called, all released after it.
func runPipeline(ctx context.Context, name string, args []string, stderr io.Writer,
	own func(*flag.FlagSet) func() error, body func(context.Context, *pipelineProc) error) error {
	fs, cfg, err := flags(name, stderr)
	if err != nil {
		return err
	}
	var check func() error
	if own != nil {
		check = own(fs)
	}
	if err := parse(fs, cfg, args); err != nil {
		return err
	}
	if check != nil {
		if err := check(); err != nil {
			return err
		}
	}
	parts, pool, done, err := open(ctx, *cfg, stderr)
	if err != nil {
		return err
	}
	defer done()
	return body(ctx, &pipelineProc{cfg: *cfg, parts: parts, pool: pool})
}

// serve starts a long-running component, waits for the signal that ends
// the process, and stops it; log says so, as events start, stopping and stop.
func serve(ctx context.Context, log *slog.Logger, what string, start func(context.Context) error, stop func(), attrs ...any) error {
	if err := start(ctx); err != nil {
		return err
	}
	log.Info(what+" started", append([]any{history.KeyEvent, history.Start}, attrs...)...)
	<-ctx.Done()
	// Said before waiting for the work in hand (a worker's message): a
	// harness that asked the pod to stop knows from this line that it has
	// been asked.
	log.Info(what+" stopping", history.KeyEvent, history.Stopping)
	stop()
	log.Info(what+" stopped", history.KeyEvent, history.Stop)
	return nil
}

func runMigrate(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs, cfg, err := flags("migrate", stderr)
	if err != nil {
		return err
	}
	if err := parse(fs, cfg, args); err != nil {
		return err
	}
	if err := app.Migrate(ctx, *cfg); err != nil {
		return err
	}
	fmt.Fprintln(stdout, "schema ready")
	return nil
}

func parseKinds(s string) ([]notification.Kind, error) {
	if s == "" || s == "all" {
		return nil, nil
	}
	var out []notification.Kind
	for _, part := range strings.Split(s, ",") {
		k := notification.Kind(strings.ToUpper(strings.TrimSpace(part)))
		if !k.Known() {
			var known []string
			for _, k := range notification.Kinds {
				known = append(known, string(k))
			}
			return nil, usagef("unknown notification kind %q (known: %s)", part, strings.Join(known, ", "))
		}
		out = append(out, k)
	}
	return out, nil
}

func runEnqueue(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var perKind *int
	var kindList *string
	var seed *bool
	var kinds []notification.Kind
	own := func(fs *flag.FlagSet) func() error {
		perKind = fs.Int("per-kind", 3, "notifications of each kind to seed business rows for")
		kindList = fs.String("kinds", "all", "comma-separated notification kinds")
		seed = fs.Bool("seed", true, "seed the business rows first")
		return func() (err error) {
			if *perKind < 0 {
				return usagef("--per-kind must not be negative")
			}
			kinds, err = parseKinds(*kindList)
			return err
		}
	}
	return runPipeline(ctx, "enqueue", args, stderr, own, func(ctx context.Context, p *pipelineProc) error {
		if *seed {
			// The seed rows are the run's fixture, no step of the pipeline:
			// no crash point fires while they are written.
			resume := crashpoint.Quiet()
			err := jobs.Seed(ctx, p.pool, p.parts.Clock.Now(), *perKind, kinds)
			resume()
			if err != nil {
				return err
			}
		}
		st, err := jobs.NewRunner(p.pool, p.parts.Clock, p.parts.Alerts, p.parts.Log).Run(ctx, kinds)
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "enqueued: %d inserted, %d already present, %d lost (alerted)\n", st.Inserted, st.Existing, st.Lost)
		return nil
	})
}

// onceFlag adds --once (usage says what one run does).
func onceFlag(once **bool, usage string) func(*flag.FlagSet) func() error {
	return func(fs *flag.FlagSet) func() error {
		*once = fs.Bool("once", false, usage)
		return nil
	}
}

func runRelay(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var once *bool
	return runPipeline(ctx, "relay", args, stderr, onceFlag(&once, "do one run and exit (a drain with --relay-drain), as a cron job would"), func(ctx context.Context, p *pipelineProc) error {
		cfg := p.cfg
		if err := app.DeclareTopology(cfg); err != nil {
			return err
		}
		pub := publisher.New(cfg.AMQPURL, broker.NamesFor(cfg.Prefix).Exchange, cfg.ConfirmTimeout).Connection(cfg.AMQPHeartbeat, cfg.AMQPDialTimeout)
		defer pub.Close()
		r := relay.New(cfg, p.pool, pub, p.parts.Clock, p.parts.Alerts, p.parts.Log)
		if !*once {
			return serve(ctx, p.parts.Log, "relay", r.Start, r.Stop, "interval", cfg.RelayInterval.String())
		}
		run := r.RunOnce
		if cfg.RelayDrain {
			run = r.Drain
		}
		st, err := run(ctx)
		if err != nil {
			return err
		}
		p.parts.Log.Info("relay run", history.KeyEvent, history.Run, "claimed", st.Claimed, "published", st.Published,
			"failed", st.Failed, "expired", st.Expired, "deferred", st.Deferred, "skipped", st.Skipped)
		fmt.Fprintf(stdout, "relay run: claimed %d, published %d, failed %d, expired %d, deferred %d, skipped %d, reclaimed %d\n",
			st.Claimed, st.Published, st.Failed, st.Expired, st.Deferred, st.Skipped, st.Reclaimed)
		return nil
	})
}

func runWorker(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	return runPipeline(ctx, "worker", args, stderr, nil, func(ctx context.Context, p *pipelineProc) error {
		cfg := p.cfg
		v := sms.New(cfg.VendorURL, cfg.VendorAccount, cfg.VendorPassword, cfg.VendorTimeout)
		w := worker.New(cfg, p.pool, p.parts.Clock, v, p.parts.Alerts, p.parts.Log)
		start := func(ctx context.Context) error {
			if err := w.Start(ctx); err != nil {
				return fmt.Errorf("start worker (RabbitMQ at %s; set OUTBOXCHAOS_AMQP_URL or --amqp-url): %w", app.Redact(cfg.AMQPURL), err)
			}
			return nil
		}
		return serve(ctx, p.parts.Log, "worker", start, w.Stop)
	})
}

func runCleanup(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var once *bool
	return runPipeline(ctx, "cleanup", args, stderr, onceFlag(&once, "do one sweep and exit"), func(ctx context.Context, p *pipelineProc) error {
		c := cleanup.New(p.cfg, p.pool, p.parts.Clock, p.parts.Alerts, p.parts.Log)
		if !*once {
			return serve(ctx, p.parts.Log, "cleanup", c.Start, c.Stop)
		}
		n, err := c.RunOnce(ctx)
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "cleanup: %d SENDING rows turned into ERROR\n", n)
		return nil
	})
}

func runVendor(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs, cfg, err := flags("vendor", stderr)
	if err != nil {
		return err
	}
	listen := fs.String("listen", "127.0.0.1:8089", "vendor listen address (loopback only)")
	alertsListen := fs.String("alerts-listen", "127.0.0.1:8090", "alert sink listen address; empty disables it")
	if err := parse(fs, cfg, args); err != nil {
		return err
	}
	log := app.Logger(stderr, "vendor")
	clk, err := cfg.NewClock()
	if err != nil {
		return usageError{err}
	}
	// --clock gives the vendor the pipeline's clock, as a send's expireat
	// is on it.
	srv := fakevendor.New(fakevendor.Options{Account: cfg.VendorAccount, Password: cfg.VendorPassword, Logger: log, Clock: clk.Now})
	base, err := srv.Start(*listen)
	if err != nil {
		return usageError{fmt.Errorf("start fake vendor on %s: %w", *listen, err)}
	}
	defer srv.Close()
	fmt.Fprintf(stdout, "fake vendor on %s (admin: %s/admin/ledger)\n", base, base)
	if *alertsListen != "" {
		sink := fakevendor.NewAlertSink()
		u, err := sink.Start(*alertsListen)
		if err != nil {
			return usageError{fmt.Errorf("start alert sink on %s: %w", *alertsListen, err)}
		}
		defer sink.Close()
		fmt.Fprintf(stdout, "alert sink on %s\n", u)
	}
	<-ctx.Done()
	return nil
}

// open builds the logger, clock and alert sender and connects to Postgres:
// what every pipeline process needs. done releases them.
func open(ctx context.Context, cfg config.Config, stderr io.Writer) (app.Parts, *pgxpool.Pool, func(), error) {
	parts, err := app.NewParts(cfg, stderr)
	if err != nil {
		return parts, nil, nil, usageError{err}
	}
	pool, err := app.OpenPool(ctx, cfg)
	if err != nil {
		parts.Alerts.Close()
		return parts, nil, nil, err
	}
	return parts, pool, func() { pool.Close(); parts.Alerts.Close() }, nil
}
