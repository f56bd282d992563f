package seam

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/outboxchaos/outboxchaos/bench"
	"github.com/outboxchaos/outboxchaos/peers"
	"github.com/outboxchaos/outboxchaos/system/broker"
	"github.com/outboxchaos/outboxchaos/system/config"
)

// enqueueChunk is how many messages one business transaction of the
// benchmark's backlog enqueues into the peer's outbox.
const enqueueChunk = 1000

// Bench measures the peer's relay throughput the way bench measures ours:
// a sandbox (bench.NewEnv), a backlog of n notification_outbox rows
// (bench.Env.Backlog, the same payloads), each also enqueued into the
// peer's outbox before the clock starts; then the peer's relay runs until
// the main queue holds n messages. It checks the peer marked every
// message done and prints peer_relay_msgs_per_s=… on stdout.
func Bench(ctx context.Context, a Adapter, cfg config.Config, n int, stdout io.Writer) error {
	e, err := bench.NewEnv(ctx, cfg.PGURL, cfg.AMQPURL)
	if err != nil {
		return err
	}
	defer e.Close()
	c, err := e.Topology("peer")
	if err != nil {
		return err
	}
	c.Instance = "peer-bench"
	env := Env{Cfg: c, Log: slog.New(slog.NewJSONHandler(io.Discard, nil)), Exchange: broker.NamesFor(c.Prefix).Exchange}
	if err := a.Migrate(ctx, env); err != nil {
		return err
	}
	if err := e.Backlog(ctx, 1, int64(n), nil); err != nil {
		return err
	}
	for lo := 1; lo <= n; lo += enqueueChunk {
		hi := min(lo+enqueueChunk-1, n)
		if err := pgx.BeginFunc(ctx, e.Pool, func(tx pgx.Tx) error {
			msgs, err := backlogMessages(ctx, tx, lo, hi)
			if err != nil {
				return err
			}
			return a.Enqueue(ctx, env, tx, msgs)
		}); err != nil {
			return fmt.Errorf("enqueue the backlog into %s: %w", a.Name(), err)
		}
	}
	main := broker.NamesFor(c.Prefix).Main
	rctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	start := time.Now()
	go func() { done <- a.Relay(rctx, env) }()
	limit := 60*time.Second + time.Duration(n)*time.Millisecond
	var elapsed time.Duration
	for {
		depth, err := e.QueueDepth(main)
		if err != nil {
			cancel()
			return err
		}
		if depth >= n {
			elapsed = time.Since(start)
			break
		}
		if time.Since(start) > limit {
			cancel()
			return fmt.Errorf("%s relayed %d of %d messages in %s", a.Name(), depth, n, limit)
		}
		select {
		case err := <-done:
			cancel()
			return fmt.Errorf("%s's relay stopped after %d of %d messages: %v", a.Name(), depth, n, err)
		case <-time.After(5 * time.Millisecond):
		}
	}
	// The peer's "done" writes may trail the last publish: wait for them
	// (not timed) and check every message is marked.
	var marked int
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		st, err := peers.Status(ctx, e.Pool, a.Name())
		if err != nil {
			cancel()
			return err
		}
		marked = 0
		for _, s := range st {
			if s == peers.Published {
				marked++
			}
		}
		if marked == n {
			break
		}
	}
	cancel()
	<-done
	depth, _ := e.QueueDepth(main)
	rate := float64(n) / elapsed.Seconds()
	fmt.Fprintf(stdout, "peer_relay_msgs_per_s=%.0f impl=%s n=%d elapsed=%s marked=%d queue=%d\n", rate, a.Name(), n, elapsed.Round(time.Millisecond), marked, depth)
	if marked != n {
		return fmt.Errorf("%s marked %d of %d messages done", a.Name(), marked, n)
	}
	return nil
}

// backlogMessages reads outbox rows lo..hi and builds their messages.
func backlogMessages(ctx context.Context, tx pgx.Tx, lo, hi int) ([]Message, error) {
	rows, err := tx.Query(ctx, `SELECT id, dedup_key, payload FROM notification_outbox WHERE id BETWEEN $1 AND $2 ORDER BY id`, lo, hi)
	if err != nil {
		return nil, fmt.Errorf("read backlog rows: %w", err)
	}
	out, err := scanMessages(rows)
	if err != nil {
		return nil, fmt.Errorf("read backlog rows: %w", err)
	}
	return out, nil
}
