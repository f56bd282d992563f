package bench

import (
	"context"
	"fmt"
	"time"

	"github.com/outboxchaos/outboxchaos/fakevendor"
	"github.com/outboxchaos/outboxchaos/history"
	"github.com/outboxchaos/outboxchaos/system/broker"
	"github.com/outboxchaos/outboxchaos/system/sms"
	"github.com/outboxchaos/outboxchaos/system/worker"
)

// workerStall is how long the worker may make no progress before the
// measurement gives up.
const workerStall = 60 * time.Second

// MeasureWorker fills a fresh main queue with n messages (as the relay
// publishes them), starts system/worker (single active consumer, prefetch 1)
// against the fake vendor with the given latency, and waits until every
// message has a SENT history row. The rate is steady state: (n−1) divided by
// the span from the first result to the last; the latency is the time from
// one result to the next (the per-message service time, since the worker
// handles one message at a time). The table note carries the vendor calls
// per second over the same span.
func MeasureWorker(ctx context.Context, e *Env, id string, n int, latency time.Duration) (res Result) {
	res = Result{ID: id, Group: groupWorker, Latency: "result → next result",
		Name: fmt.Sprintf("system/worker, fake vendor at %d ms latency, prefetch 1 (msgs/s = vendor calls/s)", latency.Milliseconds())}
	if n < 2 {
		return res.fail(fmt.Errorf("worker measurement needs at least 2 messages, got %d", n))
	}
	if err := e.ResetOutbox(ctx); err != nil {
		return res.fail(err)
	}
	cfg, err := e.Topology("worker")
	defer e.dropTopology(cfg.Prefix, &res)
	if err != nil {
		return res.fail(err)
	}
	names := broker.NamesFor(cfg.Prefix)
	if _, err := e.publishWindow(ctx, names.Exchange, n, 50, nil); err != nil {
		return res.fail(fmt.Errorf("fill queue: %w", err))
	}
	fv := fakevendor.New(fakevendor.Options{Account: cfg.VendorAccount, Password: cfg.VendorPassword, Latency: latency, Clock: e.Clock.Now})
	url, err := fv.Start("127.0.0.1:0")
	if err != nil {
		return res.fail(err)
	}
	defer fv.Close()
	cfg.VendorURL = url
	cfg.Instance = "bench-worker"
	ph := &Phases{}
	pool, err := openTracedPool(ctx, cfg, ph)
	if err != nil {
		return res.fail(err)
	}
	defer pool.Close()
	alerts := &countingAlerts{}
	v := timedVendor{sms.New(url, cfg.VendorAccount, cfg.VendorPassword, cfg.VendorTimeout), ph}
	w := worker.New(cfg, pool, e.Clock, v, alerts, e.Log)
	started := time.Now()
	if err := w.Start(ctx); err != nil {
		return res.fail(fmt.Errorf("start worker: %w", err))
	}
	stopped := false
	stop := func() {
		if !stopped {
			stopped = true
			w.Stop()
		}
	}
	defer stop()
	last, lastChange := -1, time.Now()
	for {
		var sent int
		if err := e.Pool.QueryRow(ctx, `SELECT count(*) FROM notification_histories WHERE status = $1`, history.InboxSent).Scan(&sent); err != nil {
			return res.fail(fmt.Errorf("count SENT history rows: %w", err))
		}
		if sent >= n {
			break
		}
		if sent != last {
			last, lastChange = sent, time.Now()
		} else if time.Since(lastChange) > workerStall {
			return res.fail(fmt.Errorf("worker stalled at %d of %d SENT", sent, n))
		}
		select {
		case <-ctx.Done():
			return res.fail(ctx.Err())
		case <-time.After(20 * time.Millisecond):
		}
	}
	busy := time.Since(started)
	stop()
	rows, err := e.Pool.Query(ctx, `SELECT updated_at FROM notification_histories WHERE status = $1 ORDER BY updated_at`, history.InboxSent)
	if err != nil {
		return res.fail(fmt.Errorf("read result times: %w", err))
	}
	var times []time.Time
	for rows.Next() {
		var t time.Time
		if err := rows.Scan(&t); err != nil {
			rows.Close()
			return res.fail(fmt.Errorf("scan result time: %w", err))
		}
		times = append(times, t)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return res.fail(fmt.Errorf("read result times: %w", err))
	}
	var lat Latencies
	for i := 1; i < len(times); i++ {
		lat.Add(times[i].Sub(times[i-1]), 1)
	}
	span := times[len(times)-1].Sub(times[0])
	res.finish(len(times)-1, span, &lat)
	res.Msgs = len(times)
	res.trace(ph, "message", n, busy, "broker delivery + ack, Go code (decode, render, logging)")
	calls, refkeys := fv.Calls(), map[string]bool{}
	for _, l := range fv.Ledger() {
		refkeys[l.RefKey] = true
	}
	if calls != n || len(refkeys) != n || len(fv.Ledger()) != n {
		return res.fail(fmt.Errorf("vendor saw %d calls, %d ledger entries, %d distinct refkeys for %d messages",
			calls, len(fv.Ledger()), len(refkeys), n))
	}
	if alerts.n.Load() > 0 {
		return res.fail(fmt.Errorf("%d alerts in a clean drain", alerts.n.Load()))
	}
	depth, err := e.QueueDepth(names.Main)
	if err != nil {
		return res.fail(err)
	}
	if depth != 0 {
		return res.fail(fmt.Errorf("%d messages left in the queue", depth))
	}
	res.Note = fmt.Sprintf("vendor calls/s %.0f; %d sent once each, queue empty", float64(calls-1)/span.Seconds(), n)
	return res
}
