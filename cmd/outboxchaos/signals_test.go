package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
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

	"github.com/outboxchaos/outboxchaos/scenarios/catalogue"
	"github.com/outboxchaos/outboxchaos/system/broker"
	"github.com/outboxchaos/outboxchaos/system/sandbox"
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
		if buildErr == nil {
			// The pods' build beside it, as make build puts it: the
			// harness starts its pods from it.
			buildOut, buildErr = exec.Command("go", "build", "-tags", "pod", "-o", binPath+"-pod", ".").CombinedOutput()
		}
	})
	if buildErr != nil {
		t.Fatalf("build: %v\n%s", buildErr, buildOut)
	}
	return binPath
}

// schemaGone reports whether schema and its prefix's queues are gone.
func schemaGone(t *testing.T, schema, prefix string) {
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
	for _, q := range []string{broker.NamesFor(prefix).Main, broker.NamesFor(prefix).Retry, broker.NamesFor(prefix).Parking} {
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
		// One signal after the other: waitForSchema takes the first new
		// oc_stale_relay_ schema, which a run beside it could have made.
		t.Run(sig.String(), func(t *testing.T) {
			art := t.TempDir()
			junit := filepath.Join(art, "junit.xml")
			args := []string{"scenario", "run", "stale-relay", "-v", "--artifacts", art, "--junit", junit}
			asJSON := sig == syscall.SIGTERM // one of the two speaks JSON lines instead of text
			if asJSON {
				args = append(args, "--json")
			}
			cmd := exec.Command(bin, args...)
			cmd.Env = append(os.Environ(), "OUTBOXCHAOS_PG_URL="+testenv.PGURL(), "OUTBOXCHAOS_AMQP_URL="+testenv.AMQPURL())
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			// The run is under way once its schema, kept by the
			// command's pool and named by its pid, holds the outbox table
			// and a pod runs on it; the pod's environment names the
			// run's queues.
			schema := waitForSchema(t, poolSchemaOf(cmd), 3*time.Minute)
			waitForPod(t, schema, 90*time.Second)
			prefix := queuePrefix(t, schema, 90*time.Second)
			if err := cmd.Process.Signal(sig); err != nil {
				t.Fatal(err)
			}
			err := cmd.Wait()
			code := cmd.ProcessState.ExitCode()
			if asJSON {
				rs := jsonLines(t, stdout.String())
				if code != 3 || len(rs) != 2 || rs[0].Name != "stale-relay" || rs[0].Verdict != "ERROR" || !strings.Contains(rs[0].Error, "interrupted") ||
					rs[1].Name != "interrupted" || rs[1].Verdict != "ERROR" || !strings.Contains(rs[1].Error, "interrupted by signal SIGTERM") {
					t.Fatalf("exit %d (%v)\nstdout:\n%s\nstderr:\n%s", code, err, stdout.String(), stderr.String())
				}
			} else if code != 3 || !strings.Contains(stdout.String(), "VERDICT ERROR stale-relay") || !strings.Contains(stdout.String(), "interrupted") ||
				strings.Contains(stdout.String(), "VERDICT FAIL") {
				t.Fatalf("exit %d (%v)\nstdout tail:\n%s\nstderr:\n%s", code, err, tail(stdout.String(), 15), stderr.String())
			}
			// The JUnit report says a signal ended the run, besides the
			// scenario it cut short.
			js := readJUnit(t, junit)
			if js.Errors != 2 || len(js.Cases) != 2 || js.Cases[1].Name != "interrupted" || js.Cases[1].Error == nil ||
				!strings.Contains(js.Cases[1].Error.Message, "interrupted by signal") {
				t.Errorf("JUnit report of the interrupted run: %+v", js)
			}
			schemaGone(t, schema, prefix)
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

// poolSchemaOf is how the names of the schemas cmd's pool keeps start.
func poolSchemaOf(cmd *exec.Cmd) string {
	return fmt.Sprintf("%s%d_", sandbox.PoolSchemaPrefix, cmd.Process.Pid)
}

// queuePrefix is the queue prefix of the run whose pods run on schema,
// read from a pod's environment (OUTBOXCHAOS_PREFIX). It waits for such a
// pod, up to within: the first pod of a run may be a job that exits before
// it is read, or names no prefix.
func queuePrefix(t *testing.T, schema string, within time.Duration) string {
	t.Helper()
	for deadline := time.Now().Add(within); time.Now().Before(deadline); {
		procs, _ := filepath.Glob("/proc/[0-9]*")
		for _, p := range procs {
			b, err := os.ReadFile(filepath.Join(p, "environ"))
			if err != nil || !bytes.Contains(b, []byte(schema)) {
				continue
			}
			for _, kv := range bytes.Split(b, []byte{0}) {
				if v, ok := bytes.CutPrefix(kv, []byte("OUTBOXCHAOS_PREFIX=")); ok {
					return string(v)
				}
			}
		}
		time.Sleep(50 * time.Millisecond) // polling a condition, no verdict rides on it
	}
	t.Fatalf("no pod on schema %s said its queue prefix within %s", schema, within)
	return ""
}

// pods lists the processes running with schema in their environment or
// command line: the pods of a run.
func pods(schema string) []string {
	var out []string
	procs, _ := filepath.Glob("/proc/[0-9]*")
	for _, p := range procs {
		for _, f := range []string{"environ", "cmdline"} {
			b, err := os.ReadFile(filepath.Join(p, f))
			if err == nil && bytes.Contains(b, []byte(schema)) {
				cmd, _ := os.ReadFile(filepath.Join(p, "cmdline"))
				out = append(out, filepath.Base(p)+" "+string(bytes.ReplaceAll(cmd, []byte{0}, []byte{' '})))
				break
			}
		}
	}
	return out
}

// podsGone fails t for every pod still running on schema.
func podsGone(t *testing.T, schema string) {
	t.Helper()
	for _, p := range pods(schema) {
		t.Errorf("process %s left behind, running on schema %s", p, schema)
	}
}

// waitForPod waits for a pod of the run on schema to start.
func waitForPod(t *testing.T, schema string, within time.Duration) {
	t.Helper()
	for deadline := time.Now().Add(within); time.Now().Before(deadline); {
		if len(pods(schema)) > 0 {
			return
		}
		time.Sleep(50 * time.Millisecond) // polling a condition, no verdict rides on it
	}
	t.Fatalf("no pod on schema %s within %s", schema, within)
}

// Ctrl-C or SIGTERM in the middle of each long command (a simulated day,
// the capacity runs, the report, an exploration, the peers) ends it as
// ERROR (exit 3), saying it was interrupted (never a timeout nor a FAIL),
// writing no report, and leaving no schema, queue or pod behind.
func TestSignalMidLongCommand_InterruptedAndCleanedUp(t *testing.T) {
	testenv.Require(t)
	bin := binary(t)
	firstPeerCase := catalogue.PeerCases()[0].Name
	short, err := filepath.Abs("../../sim/days/short.json")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		// prefix starts the run's schema's name; "" for a command whose
		// runs take kept schemas from its pool (named by its pid).
		name, prefix string
		args         func(dir string) []string
		sig          syscall.Signal
		// says: what stderr says beyond "interrupted by signal X", once
		// a pod runs (the simulated day under way).
		says string
	}{
		{"simulate", "oc_sim_short_", func(dir string) []string {
			return []string{"simulate", "--config", short, "--quiet", "--out", filepath.Join(dir, "out.md")}
		}, syscall.SIGINT, "simulate short: interrupted (signal SIGINT)"},
		{"capacity", "oc_sim_ad_capacity_", func(dir string) []string {
			return []string{"simulate", "capacity", "--repeat", "1", "--ad-repeat", "1", "--out", filepath.Join(dir, "out.md")}
		}, syscall.SIGTERM, ": interrupted (signal SIGTERM)"},
		{"report", "", func(dir string) []string {
			return []string{"report", "--checks", "0", "--skip-canaries", "--crash-sample", "0", "--ledger", "", "--out", filepath.Join(dir, "out.md")}
		}, syscall.SIGINT, ""},
		{"explore", "", func(dir string) []string {
			return []string{"explore", "--checks", "1", "--parallel", "1", "--artifacts", dir, "--junit", filepath.Join(dir, "junit.xml")}
		}, syscall.SIGINT, ""},
		{"peers", "oc_" + strings.ReplaceAll(firstPeerCase, "-", "_") + "_", func(dir string) []string {
			return []string{"peers", "--impls", "ours", "--cases", firstPeerCase, "--out", filepath.Join(dir, "out.md"), "--save", ""}
		}, syscall.SIGTERM, "interrupted: "},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			cmd := exec.Command(bin, c.args(dir)...)
			cmd.Dir = dir // the records of the runs (artifacts/) go there
			cmd.Env = append(os.Environ(), "OUTBOXCHAOS_PG_URL="+testenv.PGURL(), "OUTBOXCHAOS_AMQP_URL="+testenv.AMQPURL())
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			prefix := c.prefix
			if prefix == "" {
				prefix = poolSchemaOf(cmd)
			}
			schema := waitForSchema(t, prefix, 3*time.Minute)
			queues := schema
			if c.says != "" || c.prefix == "" {
				waitForPod(t, schema, 90*time.Second)
			}
			if c.prefix == "" {
				queues = queuePrefix(t, schema, 90*time.Second)
			}
			if err := cmd.Process.Signal(c.sig); err != nil {
				t.Fatal(err)
			}
			err := cmd.Wait()
			code := cmd.ProcessState.ExitCode()
			sig := map[syscall.Signal]string{syscall.SIGINT: "SIGINT", syscall.SIGTERM: "SIGTERM"}[c.sig]
			if code != 3 || !strings.Contains(stderr.String(), "interrupted by signal "+sig+": not judged (ERROR)") || !strings.Contains(stderr.String(), c.says) ||
				strings.Contains(stderr.String(), "timeout") || strings.Contains(stdout.String()+stderr.String(), "FAIL") {
				t.Errorf("exit %d (%v)\nstdout tail:\n%s\nstderr:\n%s", code, err, tail(stdout.String(), 15), stderr.String())
			}
			if _, err := os.Stat(filepath.Join(dir, "out.md")); err == nil {
				t.Errorf("an interrupted %s wrote its report", c.name)
			}
			if c.name == "explore" {
				js := readJUnit(t, filepath.Join(dir, "junit.xml"))
				last := js.Cases[len(js.Cases)-1]
				if last.Name != "interrupted" || last.Error == nil || !strings.Contains(last.Error.Message, "interrupted by signal "+sig) {
					t.Errorf("the JUnit report does not say a signal ended the run: %+v", js)
				}
			}
			schemaGone(t, schema, queues)
			podsGone(t, schema)
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
	if code := cmd.ProcessState.ExitCode(); code != 141 && code != 0 {
		t.Errorf("exit %d; stderr %s", code, stderr.String())
	}
	schemaGone(t, m[1], m[1])
}

// A command whose stdout is a pipe nobody reads any more (`… | head`)
// exits as a process SIGPIPE killed would, 141, after its clean-up, and
// says nothing: the shell expects no error text from it.
func TestClosedStdout_QuietExit141(t *testing.T) {
	testenv.Require(t)
	bin := binary(t)
	for _, args := range [][]string{{"scenario", "list"}, {"explore", "--checks", "1", "--artifacts", t.TempDir()}} {
		r, w, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		_ = r.Close() // the reader is gone before the first line
		cmd := exec.Command(bin, args...)
		cmd.Env = append(os.Environ(), "OUTBOXCHAOS_PG_URL="+testenv.PGURL(), "OUTBOXCHAOS_AMQP_URL="+testenv.AMQPURL())
		var stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = w, &stderr
		err = cmd.Run()
		_ = w.Close()
		if code := cmd.ProcessState.ExitCode(); code != 141 || stderr.Len() != 0 {
			t.Errorf("%q into a closed pipe: exit %d (%v), stderr %q; want 141 and nothing said", args, code, err, stderr.String())
		}
	}
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

// The pods' build (-tags pod) has the pipeline's commands and none of the
// harness's: the harness starts its pods from it.
func TestPodBuild_PipelineCommandsOnly(t *testing.T) {
	t.Parallel()
	out, err := exec.Command(binary(t)+"-pod", "help").CombinedOutput()
	if err != nil {
		t.Fatalf("help: %v\n%s", err, out)
	}
	for _, c := range []string{"migrate", "enqueue", "relay", "worker", "cleanup", "reconcile", "vendor", "version"} {
		if !strings.Contains(string(out), "\n  "+c+" ") {
			t.Errorf("the pod build lacks %s:\n%s", c, out)
		}
	}
	for _, c := range []string{"explore", "scenario", "report", "demo"} {
		if strings.Contains(string(out), "\n  "+c+" ") {
			t.Errorf("the pod build has the harness's %s", c)
		}
	}
}
