package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/outboxchaos/outboxchaos/bench"
	"github.com/outboxchaos/outboxchaos/peers"
	"github.com/outboxchaos/outboxchaos/peers/peerbench"
)

// peerRate is one peer relay's measured throughput.
type peerRate struct {
	Impl string
	Rate float64
	Line string // the binary's output line
	Err  string
}

// measurePeers measures each peer binary found in dir (make peer-bins)
// with peers/peerbench against the same services: each gets its own
// sandbox, the same backlog (bench.Env.Backlog) and topology as ours.
func measurePeers(ctx context.Context, dir string, n int, pgURL, amqpURL string, progress io.Writer) []peerRate {
	var out []peerRate
	for _, p := range peers.All() {
		if p.Binary == "" || !p.Features.Broker { // ours is measured apart; a peer that publishes nothing has no rate
			continue
		}
		bin := filepath.Join(dir, p.Binary)
		if _, err := os.Stat(bin); err != nil {
			out = append(out, peerRate{Impl: p.Name, Err: "not built (make peer-bins)"})
			continue
		}
		fmt.Fprintf(progress, "[bench] peer %s: %d rows\n", p.Name, n)
		res, err := peerbench.Measure(ctx, p, bin, n, pgURL, amqpURL)
		r := peerRate{Impl: p.Name, Rate: res.Rate, Line: res.Line}
		if err != nil {
			r.Err = lastLine(err.Error())
		}
		out = append(out, r)
	}
	return out
}

func lastLine(s string) string {
	ls := strings.Split(strings.TrimSpace(s), "\n")
	return ls[len(ls)-1]
}

// peersMarkdown is PERFORMANCE.md's section on the peer relays.
func peersMarkdown(rep *bench.Report, rs []peerRate, n int) string {
	ours, okOurs := rep.Result(bench.IDRelay)
	lock, okLock := rep.Result(bench.IDLockHolding)
	var b strings.Builder
	fmt.Fprintf(&b, "\n## Peer relays (issue 12)\n\n")
	fmt.Fprintf(&b, "Each peer's own binary (`make peer-bins`), driven by `peers/peerbench`, gets a sandbox like ours, the same %d-row backlog (`bench.Env.Backlog`, each row also enqueued into the peer's outbox before the clock starts), the same topology and broker, and runs the peer's relay as configured in `reports/PEERS.md` until the main queue holds every message; then it checks the peer marked every message done. Rate = rows / time to the last message in the queue.\n\n", n)
	fmt.Fprintf(&b, "| relay | msgs/s | ours (`%s`) ÷ peer |\n|---|---|---|\n", bench.IDRelay)
	if okOurs {
		fmt.Fprintf(&b, "| ours, `%s` | %.0f | 1.00 |\n", bench.IDRelay, ours.Rate)
	}
	if okLock {
		fmt.Fprintf(&b, "| lock-holding baseline | %.0f | %s |\n", lock.Rate, ratio(ours.Rate, lock.Rate, okOurs))
	}
	best := 0.0
	var keys []string
	for _, r := range rs {
		if r.Err != "" {
			fmt.Fprintf(&b, "| %s | failed: %s | – |\n", r.Impl, r.Err)
			keys = append(keys, fmt.Sprintf("peer_%s_msgs_per_s=n/a", strings.ReplaceAll(r.Impl, "-", "_")))
			continue
		}
		best = max(best, r.Rate)
		fmt.Fprintf(&b, "| %s | %.0f | %s |\n", r.Impl, r.Rate, ratio(ours.Rate, r.Rate, okOurs))
		keys = append(keys, fmt.Sprintf("peer_%s_msgs_per_s=%.0f", strings.ReplaceAll(r.Impl, "-", "_"), r.Rate))
	}
	keys = append(keys, "relay_vs_best_peer_ratio="+ratio(ours.Rate, best, okOurs && best > 0))
	fmt.Fprintf(&b, "\n```\n%s\n```\n", strings.Join(keys, "\n"))
	return b.String()
}

func ratio(a, b float64, ok bool) string {
	if !ok || b == 0 {
		return "n/a"
	}
	return fmt.Sprintf("%.2f", a/b)
}
