package testenv

import (
	"os/exec"
	"strings"
	"testing"
)

// TestSystemNeverImportsTheHarness: the layering is one-way — the pipeline
// under test knows nothing of the faults, scenarios or checker that judge it.
func TestSystemNeverImportsTheHarness(t *testing.T) {
	t.Parallel()
	out, err := exec.Command("go", "list", "-deps", "github.com/outboxchaos/outboxchaos/system/...").Output()
	if err != nil {
		t.Skipf("go list unavailable: %v", err)
	}
	for _, dep := range strings.Fields(string(out)) {
		for _, harness := range []string{"/faults", "/scenarios", "/checker", "/fakevendor"} {
			if strings.HasPrefix(dep, "github.com/outboxchaos/outboxchaos"+harness) {
				t.Errorf("system/ depends on %s", dep)
			}
		}
	}
}
