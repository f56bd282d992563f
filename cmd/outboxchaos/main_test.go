package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/outboxchaos/outboxchaos/history"
	"github.com/outboxchaos/outboxchaos/system/outbox"
	"github.com/outboxchaos/outboxchaos/system/testenv"
)

// runCLI runs the command line in-process and returns exit code, stdout
// and stderr.
func runCLI(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var stdout, stderr bytes.Buffer
	code := run(ctx, args, &stdout, &stderr)
	return code, stdout.String(), stderr.String()
}

func TestUnknownCommand_Exit2(t *testing.T) {
	t.Parallel()
	code, _, stderr := runCLI(t, "frobnicate")
	if code != 2 || !strings.Contains(stderr, `unknown command "frobnicate"`) || !strings.Contains(stderr, "usage:") {
		t.Fatalf("exit %d, stderr %q", code, stderr)
	}
}

func TestNoArguments_UsageExit2(t *testing.T) {
	t.Parallel()
	code, stdout, _ := runCLI(t)
	if code != 2 || !strings.Contains(stdout, "usage:") {
		t.Fatalf("exit %d, stdout %q", code, stdout)
	}
}

func TestHelp_ListsEveryCommandExit0(t *testing.T) {
	t.Parallel()
	code, stdout, _ := runCLI(t, "help")
	if code != 0 {
		t.Fatalf("exit %d", code)
	}
	for name := range commands {
		if !regexp.MustCompile(`(?m)^  ` + name + `\s`).MatchString(stdout) {
			t.Errorf("help does not list %q:\n%s", name, stdout)
		}
	}
	for _, want := range []string{"migrate", "enqueue", "relay", "worker", "cleanup", "vendor", "demo", "scenario"} {
		if _, ok := commands[want]; !ok {
			t.Errorf("command %q missing", want)
		}
	}
}

func TestHelpCommand_ListsItsFlagsExit0(t *testing.T) {
	t.Parallel()
	code, stdout, _ := runCLI(t, "help", "relay")
	if code != 0 || !strings.Contains(stdout, "-lease") || !strings.Contains(stdout, "-once") || !strings.Contains(stdout, "OUTBOXCHAOS_LEASE") {
		t.Fatalf("exit %d, stdout %q", code, stdout)
	}
}

func TestBadFlagValue_Exit2NamingTheFlag(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{
		{"relay", "--once", "--lease=abc"},
		{"worker", "--batch-size=lots"},
		{"cleanup", "--ad-send-until=25:00"},
	} {
		code, _, stderr := runCLI(t, args...)
		flagName := strings.TrimPrefix(strings.SplitN(args[len(args)-1], "=", 2)[0], "--")
		if code != 2 || !strings.Contains(stderr, flagName) {
			t.Errorf("%v: exit %d, stderr %q; want 2 naming %s", args, code, stderr, flagName)
		}
	}
}

func TestInvalidConfiguration_Exit2NamingTheSetting(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		args []string
		name string
	}{
		{[]string{"relay", "--once", "--batch-size=0"}, "batch-size"},
		{[]string{"migrate", "--lease=0s"}, "lease"},
		{[]string{"relay", "--once", "--clock=yesterday"}, "clock"},
		{[]string{"enqueue", "--kinds=BIRTHDAY"}, "BIRTHDAY"},
		{[]string{"demo", "--per-kind=0"}, "per-kind"},
		{[]string{"relay", "--once", "extra"}, "unexpected arguments"},
	} {
		code, _, stderr := runCLI(t, c.args...)
		if code != 2 || !strings.Contains(stderr, c.name) {
			t.Errorf("%v: exit %d, stderr %q; want 2 mentioning %s", c.args, code, stderr, c.name)
		}
	}
}

// A service that does not answer is no verdict: exit 3, saying which.
func TestUnreachableDatabase_Exit3(t *testing.T) {
	t.Parallel()
	for _, cmd := range []string{"relay", "cleanup"} {
		code, _, stderr := runCLI(t, cmd, "--once", "--pg-url", "postgres://postgres@127.0.0.1:1/test?sslmode=disable")
		if code != 3 || !strings.Contains(stderr, "unreachable") || !strings.Contains(stderr, "--pg-url") {
			t.Errorf("%s: exit %d, stderr %q; want 3 saying the database is unreachable", cmd, code, stderr)
		}
	}
	code, _, stderr := runCLI(t, "migrate", "--pg-url", "postgres://postgres@127.0.0.1:1/test?sslmode=disable")
	if code != 3 || !strings.Contains(stderr, "unreachable") {
		t.Errorf("migrate: exit %d, stderr %q", code, stderr)
	}
}

// The pipeline commands against a scratch schema: concurrent migrates
// succeed, enqueue is insert-ignore across runs, relay --once publishes.
func TestMigrateEnqueueRelayOnce(t *testing.T) {
	t.Parallel()
	db := testenv.NewSchema(t)
	prefix := testenv.NewPrefix(t)
	common := []string{"--pg-url", db.URL, "--amqp-url", testenv.AMQPURL(), "--prefix", prefix,
		"--clock", time.Now().Format("2006-01-02") + "T10:00:00+09:00*0"}
	var wg sync.WaitGroup
	codes := make([]int, 3)
	errs := make([]string, 3)
	for i := range codes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			codes[i], _, errs[i] = runCLI(t, append([]string{"migrate"}, common...)...)
		}()
	}
	wg.Wait()
	for i, c := range codes {
		if c != 0 {
			t.Fatalf("concurrent migrate %d: exit %d: %s", i, c, errs[i])
		}
	}
	code, stdout, stderr := runCLI(t, append([]string{"enqueue", "--per-kind", "2"}, common...)...)
	if code != 0 || !strings.Contains(stdout, "12 inserted, 0 already present, 0 lost") {
		t.Fatalf("enqueue: exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
	code, stdout, stderr = runCLI(t, append([]string{"enqueue", "--per-kind", "2"}, common...)...)
	if code != 0 || !strings.Contains(stdout, "0 inserted, 10 already present, 0 lost") {
		t.Fatalf("second enqueue: exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
	code, stdout, stderr = runCLI(t, append([]string{"relay", "--once"}, common...)...)
	if code != 0 || !strings.Contains(stdout, "claimed 12, published 12") {
		t.Fatalf("relay --once: exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
	rows, err := outbox.All(context.Background(), db.Pool)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rows {
		if r.Status != history.OutboxPublished {
			t.Fatalf("row %s is %s", r.DedupKey, r.Status)
		}
	}
	code, stdout, stderr = runCLI(t, append([]string{"cleanup", "--once"}, common...)...)
	if code != 0 || !strings.Contains(stdout, "0 SENDING rows") {
		t.Fatalf("cleanup --once: exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
}

func TestDemo_Exit0(t *testing.T) {
	t.Parallel()
	testenv.Require(t)
	code, stdout, stderr := runCLI(t, "demo", "--per-kind", "1", "--pg-url", testenv.PGURL(), "--amqp-url", testenv.AMQPURL())
	if code != 0 {
		t.Fatalf("demo: exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	if !strings.Contains(stdout, "6 of 6 notifications reached a handset exactly once") {
		t.Fatalf("demo output:\n%s", stdout)
	}
}

// `explore --only I -v` replays one schedule with its timeline, faults and
// final state, as `scenario run -v` prints them, whatever its verdict.
func TestExploreOnlyVerbose_PrintsTheTimeline(t *testing.T) {
	testenv.Require(t)
	t.Parallel()
	cmd := exec.Command(binary(t), "explore", "--only", "0", "-v", "--artifacts", t.TempDir())
	cmd.Env = append(os.Environ(), "OUTBOXCHAOS_PG_URL="+testenv.PGURL(), "OUTBOXCHAOS_AMQP_URL="+testenv.AMQPURL())
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("explore --only 0 -v: %v\n%s", err, out)
	}
	s := string(out)
	i, j, k := strings.Index(s, "--- timeline\n"), strings.Index(s, "--- faults\n"), strings.Index(s, "--- final state\n")
	if !strings.Contains(s, "PASS schedule 0") || i < 0 || j < i || k < j || !strings.Contains(s[i:j], "+") {
		t.Fatalf("no timeline, faults and final state, in that order:\n%s", s)
	}
}
