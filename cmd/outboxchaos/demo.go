//go:build !pod

package main

import (
	"context"
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/outboxchaos/outboxchaos/fakevendor"
	"github.com/outboxchaos/outboxchaos/history"
	"github.com/outboxchaos/outboxchaos/system/app"
	"github.com/outboxchaos/outboxchaos/system/broker"
	"github.com/outboxchaos/outboxchaos/system/clock"
	"github.com/outboxchaos/outboxchaos/system/inbox"
	"github.com/outboxchaos/outboxchaos/system/jobs"
	"github.com/outboxchaos/outboxchaos/system/notification"
	"github.com/outboxchaos/outboxchaos/system/outbox"
	"github.com/outboxchaos/outboxchaos/system/publisher"
	"github.com/outboxchaos/outboxchaos/system/relay"
	"github.com/outboxchaos/outboxchaos/system/sandbox"
	"github.com/outboxchaos/outboxchaos/system/sms"
	"github.com/outboxchaos/outboxchaos/system/worker"
)

// runDemo runs enqueue → relay → worker → fake vendor in a scratch schema
// and prefix, prints one line per notification, and drops the scratch space.
func runDemo(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs, cfg, err := flags("demo", stderr)
	if err != nil {
		return err
	}
	perKind := fs.Int("per-kind", 2, "notifications of each kind")
	timeout := fs.Duration("timeout", 60*time.Second, "give up after this long")
	if err := parse(fs, cfg, args); err != nil {
		return err
	}
	if *perKind < 1 || *perKind > 1000 {
		return usagef("--per-kind must be 1..1000")
	}
	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()

	sb, err := sandbox.New(ctx, cfg.PGURL, cfg.AMQPURL, "outboxchaos_demo")
	if err != nil {
		return fmt.Errorf("Postgres at %s (set OUTBOXCHAOS_PG_URL or --pg-url): %w", app.Redact(cfg.PGURL), err)
	}
	defer func() {
		if err := sb.Close(); err != nil {
			fmt.Fprintf(stderr, "demo cleanup: %v\n", err)
		}
	}()
	c := *cfg
	c.PGURL, c.Prefix, c.Instance = sb.PGURL, sb.Prefix, "demo"
	c.RelayInterval, c.InListenerDelay, c.VendorTimeout = 100*time.Millisecond, 50*time.Millisecond, 2*time.Second
	if c.Clock == "" {
		// Mid-morning in Seoul, so the ad cut-offs do not defer the demo.
		c.Clock = clock.NewVirtual(clock.At(time.Now(), 10, 0), 1).Setting()
	}

	vclk, err := clock.Parse(c.Clock)
	if err != nil {
		return usageError{err}
	}
	// The vendor reads the pipeline's clock: a send's expireat is on it.
	vend := fakevendor.New(fakevendor.Options{Account: c.VendorAccount, Password: c.VendorPassword, Clock: vclk.Now})
	if c.VendorURL, err = vend.Start("127.0.0.1:0"); err != nil {
		return err
	}
	defer vend.Close()
	sink := fakevendor.NewAlertSink()
	if c.AlertURL, err = sink.Start("127.0.0.1:0"); err != nil {
		return err
	}
	defer sink.Close()

	parts, err := app.NewParts(c, io.Discard)
	if err != nil {
		return usageError{err}
	}
	if err := app.Migrate(ctx, c); err != nil {
		return err
	}
	if err := app.DeclareTopology(c); err != nil {
		return err
	}
	pool, err := app.OpenPool(ctx, c)
	if err != nil {
		return err
	}
	defer pool.Close()

	if err := jobs.Seed(ctx, pool, parts.Clock.Now(), *perKind, nil); err != nil {
		return err
	}
	st, err := jobs.NewRunner(pool, parts.Clock, parts.Alerts, parts.Log).Run(ctx, nil)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "enqueued %d notifications (%d kinds × %d) in schema %s\n", st.Inserted, len(notification.Kinds), *perKind, sb.Schema)

	pub := publisher.New(c.AMQPURL, broker.NamesFor(c.Prefix).Exchange, c.ConfirmTimeout).Connection(c.AMQPHeartbeat, c.AMQPDialTimeout)
	defer pub.Close()
	rl := relay.New(c, pool, pub, parts.Clock, parts.Alerts, parts.Log)
	w := worker.New(c, pool, parts.Clock, sms.New(c.VendorURL, c.VendorAccount, c.VendorPassword, c.VendorTimeout), parts.Alerts, parts.Log)
	if err := w.Start(ctx); err != nil {
		return err
	}
	defer w.Stop()
	if err := rl.Start(ctx); err != nil {
		return err
	}
	defer rl.Stop()

	// Wait until every outbox row is final and every published one has a
	// final inbox row.
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	var rows []outbox.Row
	var hist []inbox.Row
	for {
		rows, err = outbox.All(ctx, pool)
		if err != nil {
			return err
		}
		hist, err = inbox.All(ctx, pool)
		if err != nil {
			return err
		}
		if settled(rows, hist) {
			break
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("demo did not settle within %s", *timeout)
		case <-tick.C:
		}
	}
	rl.Stop()
	w.Stop()
	parts.Alerts.Close()

	byMID := map[string]inbox.Row{}
	for _, h := range hist {
		byMID[h.MessageID] = h
	}
	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tDEDUP_KEY\tOUTBOX\tINBOX\tHANDSET")
	sent := 0
	for _, r := range rows {
		mid := notification.MessageID(r.ID)
		ib := "-"
		if h, ok := byMID[mid]; ok {
			ib = h.Status
		}
		n := vend.Count(mid)
		if n == 1 {
			sent++
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%d\n", r.ID, r.DedupKey, r.Status, ib, n)
	}
	_ = tw.Flush()
	fmt.Fprintf(stdout, "%d of %d notifications reached a handset exactly once; %d alerts\n", sent, len(rows), len(sink.Alerts()))
	if sent != len(rows) {
		return fmt.Errorf("happy path did not send every notification exactly once")
	}
	return nil
}

func settled(rows []outbox.Row, hist []inbox.Row) bool {
	final := map[string]bool{}
	for _, h := range hist {
		final[h.MessageID] = h.Status != history.InboxSending
	}
	for _, r := range rows {
		switch r.Status {
		case history.OutboxPending, history.OutboxPublishing:
			return false
		case history.OutboxPublished:
			if !final[notification.MessageID(r.ID)] {
				return false
			}
		}
	}
	return len(rows) > 0
}
