package peers_test

import (
	"os/exec"
	"strings"
	"testing"
)

// TestPeerBinariesDoNotLinkTheBench: the seam and every peer binary of this
// module stay free of the benchmark code (bench, gonum): the benchmark
// drives a peer binary from outside (bench/peerbench).
func TestPeerBinariesDoNotLinkTheBench(t *testing.T) {
	for _, pkg := range []string{"./seam", "./cmd/peer-watermill", "./cmd/peer-sendrecord", "./cmd/peer-jetstream"} {
		out, err := exec.Command("go", "list", "-deps", pkg).CombinedOutput()
		if err != nil {
			t.Fatalf("go list -deps %s: %v\n%s", pkg, err, out)
		}
		for _, dep := range strings.Fields(string(out)) {
			if dep == "github.com/outboxchaos/outboxchaos/bench" || strings.HasPrefix(dep, "gonum.org/") {
				t.Errorf("%s links %s", pkg, dep)
			}
		}
	}
}
