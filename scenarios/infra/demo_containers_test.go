//go:build containers

package infra_test

import (
	"context"
	"os"
	"os/exec"
	"regexp"
	"testing"
	"time"

	"github.com/outboxchaos/outboxchaos/infra"
	"github.com/outboxchaos/outboxchaos/scenarios/scenario"
)

// TestDemoOnContainers runs `outboxchaos demo` entirely on containers: the
// happy path, every notification on a handset exactly once.
func TestDemoOnContainers(t *testing.T) {
	infra.Require(t)
	t.Parallel()
	in := containersFor(t, &scenario.Scenario{Name: "demo"})
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	t0 := time.Now()
	cmd := exec.CommandContext(ctx, bin, "demo")
	cmd.Env = append(os.Environ(), "OUTBOXCHAOS_PG_URL="+in.PGURL(), "OUTBOXCHAOS_AMQP_URL="+in.AMQPURL())
	out, err := cmd.CombinedOutput()
	t.Logf("demo on containers, %s:\n%s", time.Since(t0).Round(time.Millisecond), out)
	if err != nil {
		t.Fatalf("demo: %v", err)
	}
	m := regexp.MustCompile(`(\d+) of (\d+) notifications reached a handset exactly once`).FindSubmatch(out)
	if m == nil || string(m[1]) != string(m[2]) {
		t.Fatalf("demo: not every notification reached a handset exactly once")
	}
}
