// Command peer-jetstream runs the JetStream design as a relay under test
// (peers/jetstream): its relay (row locks held across the JetStream
// publish, Nats-Msg-Id dedup) and its idempotent consumer:
// peer-jetstream <migrate|enqueue|relay|consume|settings|backfill> --impl jetstream.
package main

import (
	"fmt"
	"os"

	"github.com/outboxchaos/outboxchaos/peers/jetstream"
	"github.com/outboxchaos/outboxchaos/peers/seam"
)

func main() {
	os.Exit(seam.Main(pick, os.Args[1:], os.Stdout, os.Stderr))
}

func pick(impl string) (seam.Adapter, error) {
	if impl != "jetstream" {
		return nil, fmt.Errorf("--impl %q: this binary is jetstream", impl)
	}
	return jetstream.Adapter{}, nil
}
