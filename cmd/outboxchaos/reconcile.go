package main

import (
	"context"
	"fmt"
	"io"

	"github.com/outboxchaos/outboxchaos/system/reconcile"
	"github.com/outboxchaos/outboxchaos/system/sms"
)

// runReconcile settles ERROR rows from the vendor's delivery report, every
// reconcile-interval (or once with --once); --reconcile-resend re-sends
// what the vendor definitively never received.
func runReconcile(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs, cfg, err := flags("reconcile", stderr)
	if err != nil {
		return err
	}
	once := fs.Bool("once", false, "do one run and exit")
	if err := parse(fs, cfg, args); err != nil {
		return err
	}
	parts, pool, done, err := open(ctx, *cfg, stderr)
	if err != nil {
		return err
	}
	defer done()
	v := sms.New(cfg.VendorURL, cfg.VendorAccount, cfg.VendorPassword, cfg.VendorTimeout)
	r := reconcile.New(*cfg, pool, parts.Clock, v, parts.Alerts, parts.Log)
	if *once {
		st, err := r.RunOnce(ctx)
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "reconcile run: looked up %d, settled sent %d, settled failed %d, re-sent %d, again later %d, left to an operator %d\n",
			st.Looked, st.Sent, st.Failed, st.Resent, st.Again, st.Stuck)
		return nil
	}
	if err := r.Start(ctx); err != nil {
		return err
	}
	parts.Log.Info("reconciler started", "event", "start", "interval", cfg.ReconcileInterval.String(), "resend", cfg.ReconcileResend)
	<-ctx.Done()
	r.Stop()
	parts.Log.Info("reconciler stopped", "event", "stop")
	return nil
}
