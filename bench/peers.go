package bench

import (
	"fmt"
	"strings"
)

// PeerRate is one peer relay's measured throughput (bench/peerbench).
type PeerRate struct {
	Impl string
	Rate float64
	Line string // the binary's output line
	Err  string
}

// peersSection is PERFORMANCE.md's section on the peer relays, "" when
// they were not measured.
func (r *Report) peersSection() string {
	if r.Peers == nil {
		return ""
	}
	ours, okOurs := r.Result(IDRelay)
	lock, okLock := r.Result(IDLockHolding)
	var b strings.Builder
	fmt.Fprintf(&b, "\n## Peer relays\n\n")
	fmt.Fprintf(&b, "Each peer's own binary (`make peer-bins`), driven by `bench/peerbench`, gets a sandbox like ours, the same %d-row backlog (`bench.Env.Backlog`, each row also enqueued into the peer's outbox before the clock starts), the same topology and broker, and runs the peer's relay as configured in `reports/PEERS.md` until the main queue holds every message; then it checks the peer marked every message done. Rate = rows / time to the last message in the queue.\n\n", r.PeerRows)
	fmt.Fprintf(&b, "| relay | msgs/s | ours (`%s`) ÷ peer |\n|---|---|---|\n", IDRelay)
	if okOurs {
		fmt.Fprintf(&b, "| ours, `%s` | %.0f | 1.00 |\n", IDRelay, ours.Rate)
	}
	if okLock {
		fmt.Fprintf(&b, "| lock-holding baseline | %.0f | %s |\n", lock.Rate, ratio(ours.Rate, lock.Rate, okOurs))
	}
	best := 0.0
	var keys []string
	for _, p := range r.Peers {
		key := "peer_" + strings.ReplaceAll(p.Impl, "-", "_") + "_msgs_per_s="
		if p.Err != "" {
			fmt.Fprintf(&b, "| %s | failed: %s | – |\n", p.Impl, p.Err)
			keys = append(keys, key+"n/a")
			continue
		}
		best = max(best, p.Rate)
		fmt.Fprintf(&b, "| %s | %.0f | %s |\n", p.Impl, p.Rate, ratio(ours.Rate, p.Rate, okOurs))
		keys = append(keys, fmt.Sprintf("%s%.0f", key, p.Rate))
	}
	keys = append(keys, "relay_vs_best_peer_ratio="+ratio(ours.Rate, best, okOurs && best > 0))
	fmt.Fprintf(&b, "\n```\n%s\n```\n", strings.Join(keys, "\n"))
	return b.String()
}

// ratio is a/b to two decimals, or n/a.
func ratio(a, b float64, ok bool) string {
	if !ok || b == 0 {
		return "n/a"
	}
	return fmt.Sprintf("%.2f", a/b)
}
