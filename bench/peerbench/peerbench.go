// Package peerbench measures a seam peer's relay throughput the way bench
// measures ours, driving the peer's binary from outside: a sandbox
// (bench.NewEnv), the same n-row backlog (bench.Env.Backlog), the peer's
// migrate and backfill (the backlog enqueued into its outbox before the
// clock starts), then its relay until the main queue holds n messages.
// It lives apart from peers/seam so that no peer binary links the
// benchmark code.
package peerbench

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"time"

	"github.com/outboxchaos/outboxchaos/bench"
	"github.com/outboxchaos/outboxchaos/peers"
	"github.com/outboxchaos/outboxchaos/system/broker"
	"github.com/outboxchaos/outboxchaos/system/config"
)

// Result is one peer's measured throughput.
type Result struct {
	Rate    float64       // messages per second
	Elapsed time.Duration // from the relay's start to the last message in the queue
	Marked  int           // messages the peer marked done
	Line    string        // peer_relay_msgs_per_s=… impl=… n=… elapsed=… marked=…
}

// Measure runs p's binary bin (a seam binary) on an n-row backlog against
// the services at pgURL and amqpURL. The relay's process start is inside
// the timed span (tens of milliseconds against seconds of draining).
func Measure(ctx context.Context, p peers.Peer, bin string, n int, pgURL, amqpURL string) (Result, error) {
	e, err := bench.NewEnv(ctx, pgURL, amqpURL)
	if err != nil {
		return Result{}, err
	}
	defer e.Close()
	c, err := e.Topology("peer")
	if err != nil {
		return Result{}, err
	}
	c.Instance = "peer-bench"
	run := func(args ...string) error {
		cmd := exec.CommandContext(ctx, bin, append(args, "--impl", p.Name)...)
		cmd.Env = env(c)
		if b, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("%s %s: %w: %s", bin, args[0], err, b)
		}
		return nil
	}
	if err := run("migrate"); err != nil {
		return Result{}, err
	}
	if err := e.Backlog(ctx, 1, int64(n), nil); err != nil {
		return Result{}, err
	}
	if err := run("backfill", "--from", "1", "--to", strconv.Itoa(n)); err != nil {
		return Result{}, err
	}
	main := broker.NamesFor(c.Prefix).Main
	rctx, cancel := context.WithCancel(ctx)
	defer cancel()
	relay := exec.CommandContext(rctx, bin, "relay", "--impl", p.Name)
	relay.Env = env(c)
	start := time.Now()
	if err := relay.Start(); err != nil {
		return Result{}, fmt.Errorf("start %s relay: %w", bin, err)
	}
	done := make(chan error, 1)
	go func() { done <- relay.Wait() }()
	defer func() {
		_ = relay.Process.Signal(os.Interrupt)
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			cancel()
			<-done
		}
	}()
	limit := 60*time.Second + time.Duration(n)*time.Millisecond
	var elapsed time.Duration
	for {
		depth, err := e.QueueDepth(main)
		if err != nil {
			return Result{}, err
		}
		if depth >= n {
			elapsed = time.Since(start)
			break
		}
		if time.Since(start) > limit {
			return Result{}, fmt.Errorf("%s relayed %d of %d messages in %s", p.Name, depth, n, limit)
		}
		select {
		case err := <-done:
			done <- err
			return Result{}, fmt.Errorf("%s's relay stopped after %d of %d messages: %v", p.Name, depth, n, err)
		case <-time.After(5 * time.Millisecond):
		}
	}
	// The peer's "done" writes may trail the last publish: wait for them
	// (not timed) and check every message is marked.
	var marked int
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		st, err := peers.Status(ctx, e.Pool, p)
		if err != nil {
			return Result{}, err
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
	depth, _ := e.QueueDepth(main)
	r := Result{Rate: float64(n) / elapsed.Seconds(), Elapsed: elapsed, Marked: marked}
	r.Line = fmt.Sprintf("peer_relay_msgs_per_s=%.0f impl=%s n=%d elapsed=%s marked=%d queue=%d", r.Rate, p.Name, n, elapsed.Round(time.Millisecond), marked, depth)
	if marked != n {
		return r, fmt.Errorf("%s marked %d of %d messages done", p.Name, marked, n)
	}
	return r, nil
}

// env is the peer's environment: ours with c's settings.
func env(c config.Config) []string {
	return append(os.Environ(), append(c.Env(), "OUTBOXCHAOS_LOG_FORMAT=json")...)
}
