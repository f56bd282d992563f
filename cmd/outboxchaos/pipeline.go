package main

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/outboxchaos/outboxchaos/fakevendor"
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
	fs, cfg, err := flags("enqueue", stderr)
	if err != nil {
		return err
	}
	perKind := fs.Int("per-kind", 3, "notifications of each kind to seed business rows for")
	kindList := fs.String("kinds", "all", "comma-separated notification kinds")
	seed := fs.Bool("seed", true, "seed the business rows first")
	if err := parse(fs, cfg, args); err != nil {
		return err
	}
	kinds, err := parseKinds(*kindList)
	if err != nil {
		return err
	}
	if *perKind < 0 {
		return usagef("--per-kind must not be negative")
	}
	parts, pool, done, err := open(ctx, *cfg, stderr)
	if err != nil {
		return err
	}
	defer done()
	if *seed {
		// The seed rows are the run's fixture, no step of the pipeline:
		// no crash point fires while they are written.
		resume := crashpoint.Quiet()
		err := jobs.Seed(ctx, pool, parts.Clock.Now(), *perKind, kinds)
		resume()
		if err != nil {
			return err
		}
	}
	r := jobs.NewRunner(pool, parts.Clock, parts.Alerts, parts.Log)
	st, err := r.Run(ctx, kinds)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "enqueued: %d inserted, %d already present, %d lost (alerted)\n", st.Inserted, st.Existing, st.Lost)
	return nil
}

func runRelay(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs, cfg, err := flags("relay", stderr)
	if err != nil {
		return err
	}
	once := fs.Bool("once", false, "do one run and exit (a drain with --relay-drain), as a cron job would")
	if err := parse(fs, cfg, args); err != nil {
		return err
	}
	parts, pool, done, err := open(ctx, *cfg, stderr)
	if err != nil {
		return err
	}
	defer done()
	if err := app.DeclareTopology(*cfg); err != nil {
		return err
	}
	pub := publisher.New(cfg.AMQPURL, broker.NamesFor(cfg.Prefix).Exchange, cfg.ConfirmTimeout).Connection(cfg.AMQPHeartbeat, cfg.AMQPDialTimeout)
	defer pub.Close()
	r := relay.New(*cfg, pool, pub, parts.Clock, parts.Alerts, parts.Log)
	if *once {
		run := r.RunOnce
		if cfg.RelayDrain {
			run = r.Drain
		}
		st, err := run(ctx)
		if err != nil {
			return err
		}
		parts.Log.Info("relay run", "event", "run", "claimed", st.Claimed, "published", st.Published,
			"failed", st.Failed, "expired", st.Expired, "deferred", st.Deferred, "skipped", st.Skipped)
		fmt.Fprintf(stdout, "relay run: claimed %d, published %d, failed %d, expired %d, deferred %d, skipped %d, reclaimed %d\n",
			st.Claimed, st.Published, st.Failed, st.Expired, st.Deferred, st.Skipped, st.Reclaimed)
		return nil
	}
	if err := r.Start(ctx); err != nil {
		return err
	}
	parts.Log.Info("relay started", "event", "start", "interval", cfg.RelayInterval.String())
	<-ctx.Done()
	r.Stop()
	parts.Log.Info("relay stopped", "event", "stop")
	return nil
}

func runWorker(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs, cfg, err := flags("worker", stderr)
	if err != nil {
		return err
	}
	if err := parse(fs, cfg, args); err != nil {
		return err
	}
	parts, pool, done, err := open(ctx, *cfg, stderr)
	if err != nil {
		return err
	}
	defer done()
	v := sms.New(cfg.VendorURL, cfg.VendorAccount, cfg.VendorPassword, cfg.VendorTimeout)
	w := worker.New(*cfg, pool, parts.Clock, v, parts.Alerts, parts.Log)
	if err := w.Start(ctx); err != nil {
		return fmt.Errorf("start worker (RabbitMQ at %s; set OUTBOXCHAOS_AMQP_URL or --amqp-url): %w", app.Redact(cfg.AMQPURL), err)
	}
	parts.Log.Info("worker started", "event", "start")
	<-ctx.Done()
	// Said before waiting for the message in hand: a harness that asked
	// the worker to stop knows from this line that it has been asked.
	parts.Log.Info("worker stopping", "event", "stopping")
	w.Stop()
	parts.Log.Info("worker stopped", "event", "stop")
	return nil
}

func runCleanup(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs, cfg, err := flags("cleanup", stderr)
	if err != nil {
		return err
	}
	once := fs.Bool("once", false, "do one sweep and exit")
	if err := parse(fs, cfg, args); err != nil {
		return err
	}
	parts, pool, done, err := open(ctx, *cfg, stderr)
	if err != nil {
		return err
	}
	defer done()
	c := cleanup.New(*cfg, pool, parts.Clock, parts.Alerts, parts.Log)
	if *once {
		n, err := c.RunOnce(ctx)
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "cleanup: %d SENDING rows turned into ERROR\n", n)
		return nil
	}
	if err := c.Start(ctx); err != nil {
		return err
	}
	<-ctx.Done()
	c.Stop()
	return nil
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
