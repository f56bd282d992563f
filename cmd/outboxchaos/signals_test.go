package main

import (
	"bufio"
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/outboxchaos/outboxchaos/system/broker"
	"github.com/outboxchaos/outboxchaos/system/testenv"
)

var (
	buildOnce sync.Once
	binPath   string
	buildErr  error
	buildOut  []byte
)

// binary builds this command once per test run: the scenarios start their
// pods from it.
func binary(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "outboxchaos-bin-")
		if err != nil {
			buildErr = err
			return
		}
		binPath = filepath.Join(dir, "outboxchaos")
		buildOut, buildErr = exec.Command("go", "build", "-o", binPath, ".").CombinedOutput()
	})
	if buildErr != nil {
		t.Fatalf("build: %v\n%s", buildErr, buildOut)
	}
	return binPath
}

// schemaGone reports whether schema and its prefix's queues are gone.
func schemaGone(t *testing.T, schema string) {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, testenv.PGURL())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var n int
	if err := conn.QueryRow(ctx, `SELECT count(*) FROM pg_namespace WHERE nspname = $1`, schema).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 0 {
		t.Errorf("schema %s left behind", schema)
	}
	ac, err := amqp.Dial(testenv.AMQPURL())
	if err != nil {
		t.Fatal(err)
	}
	defer ac.Close()
	for _, q := range []string{broker.NamesFor(schema).Main, broker.NamesFor(schema).Retry, broker.NamesFor(schema).Parking} {
		ch, err := ac.Channel()
		if err != nil {
			t.Fatal(err)
		}
		if _, err := ch.QueueDeclarePassive(q, true, false, false, false, nil); err == nil {
			t.Errorf("queue %s left behind", q)
			_ = ch.Close()
		}
	}
}

// Ctrl-C or SIGTERM mid-scenario ends the run as ERROR (exit 3) after its
// clean-up: its schema and queues are gone.
func TestSignalMidScenario_NotJudgedAndCleanedUp(t *testing.T) {
	testenv.Require(t)
	bin := binary(t)
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM} {
		t.Run(sig.String(), func(t *testing.T) {
			t.Parallel()
			art := t.TempDir()
			cmd := exec.Command(bin, "scenario", "run", "stale-relay", "-v", "--artifacts", art)
			cmd.Env = append(os.Environ(), "OUTBOXCHAOS_PG_URL="+testenv.PGURL(), "OUTBOXCHAOS_AMQP_URL="+testenv.AMQPURL())
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			// The run is under way once its schema exists with the
			// outbox table the migration created.
			schema := waitForSchema(t, "oc_stale_relay_", 60*time.Second)
			if err := cmd.Process.Signal(sig); err != nil {
				t.Fatal(err)
			}
			err := cmd.Wait()
			code := cmd.ProcessState.ExitCode()
			if code != 3 || !strings.Contains(stdout.String(), "VERDICT ERROR stale-relay") || !strings.Contains(stdout.String(), "interrupted") ||
				strings.Contains(stdout.String(), "VERDICT FAIL") {
				t.Fatalf("exit %d (%v)\nstdout tail:\n%s\nstderr:\n%s", code, err, tail(stdout.String(), 15), stderr.String())
			}
			schemaGone(t, schema)
			// Its record says it was not judged: checked again, it is
			// ERROR (exit 3), as the run printed it.
			recs, _ := filepath.Glob(filepath.Join(art, "runs", "stale-relay-*", "run.json"))
			if len(recs) != 1 {
				t.Fatalf("want one run record under %s, got %v", art, recs)
			}
			var out bytes.Buffer
			check := exec.Command(bin, "scenario", "check", recs[0])
			check.Stdout, check.Stderr = &out, &out
			_ = check.Run()
			if code := check.ProcessState.ExitCode(); code != 3 || !strings.Contains(out.String(), "VERDICT ERROR stale-relay") ||
				!strings.Contains(out.String(), "interrupted") {
				t.Errorf("scenario check of the interrupted run's record: exit %d\n%s", code, out.String())
			}
		})
	}
}

// waitForSchema waits for a new schema whose name starts with prefix and
// that holds the outbox table, and returns its name.
func waitForSchema(t *testing.T, prefix string, within time.Duration) string {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, testenv.PGURL())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	before := map[string]bool{}
	rows, _ := conn.Query(ctx, `SELECT nspname FROM pg_namespace WHERE starts_with(nspname, $1)`, prefix)
	for rows.Next() {
		var n string
		_ = rows.Scan(&n)
		before[n] = true
	}
	rows.Close()
	deadline := time.Now().Add(within)
	for time.Now().Before(deadline) {
		var names []string
		rows, err := conn.Query(ctx, `SELECT table_schema FROM information_schema.tables WHERE starts_with(table_schema, $1) AND table_name = 'notification_outbox'`, prefix)
		if err != nil {
			t.Fatal(err)
		}
		for rows.Next() {
			var n string
			_ = rows.Scan(&n)
			if !before[n] {
				names = append(names, n)
			}
		}
		rows.Close()
		if len(names) == 1 {
			return names[0]
		}
		time.Sleep(50 * time.Millisecond) // polling a condition, no verdict rides on it
	}
	t.Fatalf("no schema %s* with an outbox within %s", prefix, within)
	return ""
}

func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// `demo | head -1`: the closed pipe ends the demo, which still drops its
// schema and queues.
func TestDemoIntoClosedPipe_CleansUp(t *testing.T) {
	testenv.Require(t)
	bin := binary(t)
	cmd := exec.Command(bin, "demo", "--per-kind", "1")
	cmd.Env = append(os.Environ(), "OUTBOXCHAOS_PG_URL="+testenv.PGURL(), "OUTBOXCHAOS_AMQP_URL="+testenv.AMQPURL())
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	first, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatalf("first line: %v; stderr %s", err, stderr.String())
	}
	_ = out.Close() // as head does after its line
	_ = cmd.Wait()
	m := regexp.MustCompile(`in schema (\S+)`).FindStringSubmatch(first)
	if m == nil {
		t.Fatalf("first line %q names no schema", first)
	}
	if code := cmd.ProcessState.ExitCode(); code != 3 && code != 0 {
		t.Errorf("exit %d; stderr %s", code, stderr.String())
	}
	schemaGone(t, m[1])
}

// A SIGPIPE (a socket write to a link the harness cut) never stops a
// pipeline process: the worker of delivery-limit-outage must outlive its
// database link's outage. Only SIGINT and SIGTERM end it.
func TestSIGPIPEDoesNotStopAPipelineProcess(t *testing.T) {
	bin := binary(t)
	cmd := exec.Command(bin, "vendor", "--listen", "127.0.0.1:0", "--alerts-listen", "")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	if _, err := bufio.NewReader(out).ReadString('\n'); err != nil { // "fake vendor on …": running
		t.Fatal(err)
	}
	_ = cmd.Process.Signal(syscall.SIGPIPE)
	_ = cmd.Process.Signal(syscall.SIGTERM)
	_ = cmd.Wait()
	if code := cmd.ProcessState.ExitCode(); code != 0 || !strings.Contains(stderr.String(), "signal SIGTERM: stopping") {
		t.Fatalf("exit %d; stderr %q: want the SIGTERM, not the SIGPIPE, to stop it", code, stderr.String())
	}
}
