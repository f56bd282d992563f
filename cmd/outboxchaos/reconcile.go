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
	var once *bool
	return runPipeline(ctx, "reconcile", args, stderr, onceFlag(&once, "do one run and exit"), func(ctx context.Context, p *pipelineProc) error {
		cfg := p.cfg
		v := sms.New(cfg.VendorURL, cfg.VendorAccount, cfg.VendorPassword, cfg.VendorTimeout)
		r := reconcile.New(cfg, p.pool, p.parts.Clock, v, p.parts.Alerts, p.parts.Log)
		if !*once {
			return serve(ctx, p.parts.Log, "reconciler", r.Start, r.Stop, "interval", cfg.ReconcileInterval.String(), "resend", cfg.ReconcileResend)
		}
		st, err := r.RunOnce(ctx)
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "reconcile run: looked up %d, settled sent %d, settled failed %d, re-sent %d, again later %d, left to an operator %d\n",
			st.Looked, st.Sent, st.Failed, st.Resent, st.Again, st.Stuck)
		return nil
	})
}
