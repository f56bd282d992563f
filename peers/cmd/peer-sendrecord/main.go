// Command peer-sendrecord runs the "send, then record" batch as a
// relay under test (peers/sendrecord): peer-sendrecord
// <migrate|enqueue|relay|settings|backfill> --impl sendrecord.
package main

import (
	"fmt"
	"os"

	"github.com/outboxchaos/outboxchaos/peers/seam"
	"github.com/outboxchaos/outboxchaos/peers/sendrecord"
)

func main() {
	os.Exit(seam.Main(pick, os.Args[1:], os.Stdout, os.Stderr))
}

func pick(impl string) (seam.Adapter, error) {
	if impl != "sendrecord" {
		return nil, fmt.Errorf("--impl %q: this binary is sendrecord", impl)
	}
	return sendrecord.Adapter{}, nil
}
