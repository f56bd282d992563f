//go:build chaos

package scenarios_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/outboxchaos/outboxchaos/scenarios"
	"github.com/outboxchaos/outboxchaos/system/testenv"
)

var bin string

// TestMain builds the outboxchaos binary once; the scenarios run it as pods.
func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "outboxchaos-bin")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	bin = filepath.Join(dir, "outboxchaos")
	args := []string{"build", "-o", bin}
	if os.Getenv("OUTBOXCHAOS_POD_RACE") == "1" {
		args = append(args, "-race")
	}
	cmd := exec.Command("go", append(args, "../cmd/outboxchaos")...)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		fmt.Fprintf(os.Stderr, "build outboxchaos for the pods: %v\n", err)
		os.Exit(1)
	}
	code := m.Run()
	_ = os.RemoveAll(dir)
	os.Exit(code)
}

// TestScenario runs every named scenario against the real services; each
// must match its row of the SPEC failure table.
func TestScenario(t *testing.T) {
	testenv.Require(t)
	for _, s := range scenarios.Catalogue() {
		t.Run(s.Name, func(t *testing.T) {
			t.Parallel()
			o := scenarios.DefaultOptions()
			o.PGURL, o.AMQPURL, o.Bin = testenv.PGURL(), testenv.AMQPURL(), bin
			res := scenarios.Run(context.Background(), s, o)
			t.Logf("%s seed=%d %.1fs: %s", s.Name, res.Seed, res.Duration.Seconds(), res.Verdict)
			if !res.Pass() {
				t.Errorf("scenario %s failed (seed %d): %v\n  %s\n--- timeline\n%s", s.Name, res.Seed, res.Err, res.Verdict.Details, res.Timeline)
			}
		})
	}
}

// TestCanaries enables each deliberate bug in turn: at least one of its
// catcher scenarios must go red, or the harness could not have failed.
func TestCanaries(t *testing.T) {
	testenv.Require(t)
	for bug, catchers := range scenarios.Catchers {
		t.Run(bug, func(t *testing.T) {
			t.Parallel()
			o := scenarios.DefaultOptions()
			o.PGURL, o.AMQPURL, o.Bin = testenv.PGURL(), testenv.AMQPURL(), bin
			res := scenarios.Sweep(context.Background(), o, []string{bug}, nil)[0]
			if !res.Caught() {
				t.Errorf("canary %s survived: none of %v went red", bug, catchers)
			}
			t.Logf("canary %s caught by %v", bug, res.CaughtBy)
		})
	}
}
