//go:build containers

package infra_test

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/outboxchaos/outboxchaos/infra"
	"github.com/outboxchaos/outboxchaos/scenarios"
	"github.com/outboxchaos/outboxchaos/scenarios/scenario"
)

var bin string

// TestMain builds the outboxchaos binary once; the scenarios run it as pods.
func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "outboxchaos-infra-bin")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	bin = filepath.Join(dir, "outboxchaos")
	// The harness's build, and the pods' beside it as make build puts it.
	for _, build := range [][]string{{"build", "-o", bin}, {"build", "-tags", "pod", "-o", bin + "-pod"}} {
		cmd := exec.Command("go", append(build, "../../cmd/outboxchaos")...)
		cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
		if err := cmd.Run(); err != nil {
			fmt.Fprintf(os.Stderr, "build outboxchaos for the pods: %v\n", err)
			os.Exit(1)
		}
	}
	code := m.Run()
	_ = os.RemoveAll(dir)
	os.Exit(code)
}

// containersFor starts the containers scenario s asks for and removes
// them when t ends, even when it fails half-way.
func containersFor(t *testing.T, s *scenario.Scenario) *infra.Containers {
	t.Helper()
	o := infra.Options{Postgres: true, RabbitNodes: 1, Log: slog.New(slog.NewTextHandler(os.Stderr, nil)).With("test", t.Name())}
	if s.Infra == "cluster" {
		o.RabbitNodes = 3
	}
	t0 := time.Now()
	in := infra.StartT(t, o)
	t.Logf("containers for %s up in %s: %v", s.Name, time.Since(t0).Round(time.Millisecond), rounded(in.StartTimes()))
	return in
}

// run runs s once on its own containers, with canary bug armed if set;
// the containers go when t ends.
func run(t *testing.T, s *scenario.Scenario, bug string) scenarios.Result {
	t.Helper()
	return runOn(containersFor(t, s), s, bug)
}

// runOnce runs s on containers it removes before returning (a property
// check: the next one starts afresh).
func runOnce(t *testing.T, s *scenario.Scenario) scenarios.Result {
	t.Helper()
	in, err := infra.Start(context.Background(), infra.Options{Postgres: true, RabbitNodes: 1})
	if err != nil {
		t.Fatalf("start containers: %v", err)
	}
	defer func() {
		if err := in.Close(context.Background()); err != nil {
			t.Errorf("remove containers: %v", err)
		}
	}()
	return runOn(in, s, "")
}

func runOn(in *infra.Containers, s *scenario.Scenario, bug string) scenarios.Result {
	o := scenarios.DefaultOptions()
	o.PGURL, o.AMQPURL, o.Bin, o.Artifacts, o.Bug, o.Infra = in.PGURL(), in.AMQPURL(), bin, "../../artifacts", bug, in
	return scenarios.Run(context.Background(), s, o)
}

func rounded(m map[string]time.Duration) map[string]string {
	out := map[string]string{}
	for k, v := range m {
		out[k] = v.Round(100 * time.Millisecond).String()
	}
	return out
}
