// Command peer-watermill runs Watermill's forwarder as a relay under test
// (peers/watermill): peer-watermill <migrate|enqueue|relay|settings> --impl
// watermill-offsets|watermill-offsets-confirm|watermill-queue|watermill-queue-confirm.
package main

import (
	"fmt"
	"os"
	"sort"
	"strings"

	"github.com/outboxchaos/outboxchaos/peers/seam"
	"github.com/outboxchaos/outboxchaos/peers/watermill"
)

func main() {
	os.Exit(seam.Main(pick, os.Args[1:], os.Stdout, os.Stderr))
}

func pick(impl string) (seam.Adapter, error) {
	if a, ok := watermill.Impls[impl]; ok {
		return a, nil
	}
	var names []string
	for n := range watermill.Impls {
		names = append(names, n)
	}
	sort.Strings(names)
	return nil, fmt.Errorf("--impl %q: want one of %s", impl, strings.Join(names, ", "))
}
