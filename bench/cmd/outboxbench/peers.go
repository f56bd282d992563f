package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/outboxchaos/outboxchaos/bench"
	"github.com/outboxchaos/outboxchaos/bench/peerbench"
	"github.com/outboxchaos/outboxchaos/peers"
)

// measurePeers measures each peer binary found in dir (make peer-bins)
// with bench/peerbench against the same services: each gets its own
// sandbox, the same backlog (bench.Env.Backlog) and topology as ours.
func measurePeers(ctx context.Context, dir string, n int, pgURL, amqpURL string, progress io.Writer) []bench.PeerRate {
	var out []bench.PeerRate
	for _, p := range peers.All() {
		if p.Binary == "" || !p.Features.Broker { // ours is measured apart; a peer that publishes nothing has no rate
			continue
		}
		bin := filepath.Join(dir, p.Binary)
		if _, err := os.Stat(bin); err != nil {
			out = append(out, bench.PeerRate{Impl: p.Name, Err: "not built (make peer-bins)"})
			continue
		}
		fmt.Fprintf(progress, "[bench] peer %s: %d rows\n", p.Name, n)
		res, err := peerbench.Measure(ctx, p, bin, n, pgURL, amqpURL)
		r := bench.PeerRate{Impl: p.Name, Rate: res.Rate, Line: res.Line}
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
