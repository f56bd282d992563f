package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/outboxchaos/outboxchaos/scenarios/catalogue"
	"github.com/outboxchaos/outboxchaos/system/testenv"
)

// The harness commands write under artifacts/ (which git ignores) unless
// a flag names another path: the quick form of each, run in a clean clone
// of the repository, writes its page there and leaves `git status` empty.
// (simulate capacity's smallest run takes minutes: its defaults are
// checked by TestNoFlagDefaultsUnderReports instead.)
func TestCommandsLeaveTheTreeClean(t *testing.T) {
	testenv.Require(t)
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed: no clean clone to run the commands in")
	}
	top, err := exec.Command("git", "rev-parse", "--show-toplevel").Output()
	if err != nil {
		t.Skipf("not in a git checkout: %v", err)
	}
	bin := binary(t)
	tmp := t.TempDir()
	bench := filepath.Join(tmp, "outboxbench")
	if out, err := exec.Command("go", "build", "-o", bench, "../../bench/cmd/outboxbench").CombinedOutput(); err != nil {
		t.Fatalf("build outboxbench: %v\n%s", err, out)
	}
	// The day lives in this working tree: a file added since the last
	// commit is not in the clone. Its one member sends one message, so
	// simulate has no back-to-back sends to measure compression by (with
	// three, a loaded machine made it refuse the day as distorted, exit 3),
	// and at rate 10 a cron run may start 6 s late before the day is not
	// valid.
	tiny, err := filepath.Abs("testdata/tiny-day.json")
	if err != nil {
		t.Fatal(err)
	}
	clone := filepath.Join(tmp, "clone")
	if out, err := exec.Command("git", "clone", "--quiet", "--local", strings.TrimSpace(string(top)), clone).CombinedOutput(); err != nil {
		t.Fatalf("git clone: %v\n%s", err, out)
	}
	if st := gitStatus(t, clone); st != "" {
		t.Fatalf("the fresh clone is not clean:\n%s", st)
	}
	peerCase := catalogue.PeerCases()[0].Name
	env := append(os.Environ(), "OUTBOXCHAOS_PG_URL="+testenv.PGURL(), "OUTBOXCHAOS_AMQP_URL="+testenv.AMQPURL())
	t.Run("commands", func(t *testing.T) {
		for _, c := range []struct {
			name   string
			args   []string
			writes []string // under the clone, besides what git ignores
		}{
			{"explore", []string{bin, "explore", "--checks", "1", "--parallel", "1"}, nil},
			{"crashpoints", []string{bin, "crashpoints", "--workload", "one", "--bound", "1", "--sample", "1", "--parallel", "1"}, nil},
			{"simulate", []string{bin, "simulate", "--config", tiny, "--quiet"}, []string{"artifacts/SIMULATION.md", "artifacts/SIMULATION/summary.json"}},
			{"report", []string{bin, "report", "--run", "^pending-before-relay$", "--checks", "1", "--reconciled=false", "--skip-canaries", "--crash-sample", "0"},
				[]string{"artifacts/RELIABILITY.md", "artifacts/explored.jsonl"}},
			{"peers", []string{bin, "peers", "--impls", "ours", "--cases", peerCase}, []string{"artifacts/PEERS.md", "artifacts/peers/matrix.json"}},
			{"bench", []string{bench, "-quick", "-n", "100", "-only", "^raw.publish.each$"}, []string{"artifacts/PERFORMANCE.md"}},
		} {
			t.Run(c.name, func(t *testing.T) {
				t.Parallel()
				// Bounds a hang only: under load simulate's day takes
				// minutes.
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
				defer cancel()
				cmd := exec.CommandContext(ctx, c.args[0], c.args[1:]...)
				cmd.Dir, cmd.Env = clone, env
				out, err := cmd.CombinedOutput()
				if err != nil {
					t.Fatalf("%s: %v\n%s", strings.Join(c.args[1:], " "), err, tail(string(out), 20))
				}
				for _, f := range c.writes {
					if _, err := os.Stat(filepath.Join(clone, f)); err != nil {
						t.Errorf("%s wrote no %s: %v\n%s", c.name, f, err, tail(string(out), 10))
					}
				}
			})
		}
	})
	if st := gitStatus(t, clone); st != "" {
		t.Errorf("the commands changed the working tree:\n%s", st)
	}
}

// gitStatus is `git status --porcelain` of the working tree at dir,
// untracked files listed one by one.
func gitStatus(t *testing.T, dir string) string {
	t.Helper()
	out, err := exec.Command("git", "-C", dir, "status", "--porcelain", "--untracked-files=all").CombinedOutput()
	if err != nil {
		t.Fatalf("git status: %v\n%s", err, out)
	}
	return strings.TrimSpace(string(out))
}

// No flag of any command defaults to a path under reports/: only an
// explicit flag (a make target's) writes a committed page.
func TestNoFlagDefaultsUnderReports(t *testing.T) {
	t.Parallel()
	committed := regexp.MustCompile(`\(default "?reports/`)
	for _, p := range commandPaths() {
		_, stdout, _ := runCLI(t, append(p, "-h")...)
		for _, l := range strings.Split(stdout, "\n") {
			if committed.MatchString(l) {
				t.Errorf("%s -h: a default under reports/: %s", strings.Join(p, " "), strings.TrimSpace(l))
			}
		}
	}
}
