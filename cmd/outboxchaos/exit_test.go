package main

import (
	"bytes"
	"context"
	"encoding/json"
	"encoding/xml"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/outboxchaos/outboxchaos/checker"
	"github.com/outboxchaos/outboxchaos/peers"
	"github.com/outboxchaos/outboxchaos/scenarios"
	"github.com/outboxchaos/outboxchaos/scenarios/catalogue"
	"github.com/outboxchaos/outboxchaos/scenarios/explore"
	"github.com/outboxchaos/outboxchaos/scenarios/scenario"
	"github.com/outboxchaos/outboxchaos/system/testenv"
)

const closedPG = "postgres://postgres@127.0.0.1:1/test?sslmode=disable"

// An unreachable Postgres or a refused RabbitMQ login is no verdict: every
// harness command exits 3 before any run, saying which service and why.
func TestPreflight_NotJudgedExit3(t *testing.T) {
	testenv.Require(t)
	for _, c := range []struct {
		env, value, want string
	}{
		{"OUTBOXCHAOS_PG_URL", closedPG, "Postgres at postgres://postgres@127.0.0.1:1/test?sslmode=disable: unreachable"},
		{"OUTBOXCHAOS_AMQP_URL", "amqp://guest:wrong-pw@127.0.0.1:5672/", "RabbitMQ at amqp://guest:xxxxx@127.0.0.1:5672/: authentication failed"},
	} {
		t.Run(c.env, func(t *testing.T) {
			t.Setenv(c.env, c.value)
			for _, args := range [][]string{
				{"scenario", "run", "confirm-timeout", "--artifacts", ""},
				{"canary", "--bug", "auto-ack", "--artifacts", ""},
				{"explore", "--checks", "1", "--artifacts", ""},
				{"crashpoints", "--workload", "one", "--artifacts", ""},
			} {
				code, stdout, stderr := runCLI(t, args...)
				if code != 3 || !strings.Contains(stderr, c.want) || !strings.Contains(stderr, "not judged") ||
					strings.Contains(stdout, "FAIL") || strings.Contains(stdout, "SURVIVED") || strings.Contains(stderr, "wrong-pw") {
					t.Errorf("%q: exit %d\nstdout:\n%s\nstderr:\n%s", args, code, stdout, stderr)
				}
			}
		})
	}
}

// An environment variable is checked as its flag is: a bad value is a
// usage error naming it, for the harness commands too.
func TestBadEnvironment_Exit2(t *testing.T) {
	t.Setenv("OUTBOXCHAOS_LEASE", "abc")
	code, _, stderr := runCLI(t, "scenario", "run", "confirm-timeout")
	if code != 2 || !strings.Contains(stderr, "OUTBOXCHAOS_LEASE") {
		t.Fatalf("exit %d, stderr %q", code, stderr)
	}
}

func TestLogEnvChecked(t *testing.T) {
	t.Setenv("OUTBOXCHAOS_LOG_FORMAT", "xml")
	if err := armHooks(os.Stderr); err == nil || !strings.Contains(err.Error(), "OUTBOXCHAOS_LOG_FORMAT") {
		t.Fatalf("OUTBOXCHAOS_LOG_FORMAT=xml: %v", err)
	}
	t.Setenv("OUTBOXCHAOS_LOG_FORMAT", "json")
	t.Setenv("OUTBOXCHAOS_LOG_LEVEL", "loud")
	if err := armHooks(os.Stderr); err == nil || !strings.Contains(err.Error(), "OUTBOXCHAOS_LOG_LEVEL") {
		t.Fatalf("OUTBOXCHAOS_LOG_LEVEL=loud: %v", err)
	}
	t.Setenv("OUTBOXCHAOS_LOG_LEVEL", "debug")
	if err := armHooks(os.Stderr); err != nil {
		t.Fatal(err)
	}
}

func TestUsageErrors_Exit2(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	empty := filepath.Join(dir, "empty.json")
	notJSON := filepath.Join(dir, "notes.txt")
	_ = os.WriteFile(empty, []byte("{}"), 0o644)
	_ = os.WriteFile(notJSON, []byte("hello"), 0o644)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"scenario", "run", "confirm-timeout", "--impl", "nosuch"}, `unknown relay under test "nosuch"`},
		{[]string{"scenario", "run", "confirm-timeout", "no-such-scenario"}, `unknown scenario "no-such-scenario"`},
		{[]string{"scenario", "run", "-run", "(("}, "-run"},
		{[]string{"scenario", "run", "-run", "^nothing-matches$"}, "matches no scenario"},
		{[]string{"scenario", "run", "all", "--shard", "4/3"}, "shard"},
		{[]string{"scenario", "run"}, "want scenario names"},
		{[]string{"scenario", "check", empty}, "is not a run record"},
		{[]string{"scenario", "check", notJSON}, "is not a run record"},
		{[]string{"scenario", "check", dir}, "read run record"},
		{[]string{"scenario", "frob"}, "unknown scenario sub-command"},
		{[]string{"help", "frob"}, "no help on"},
	} {
		code, _, stderr := runCLI(t, c.args...)
		if code != 2 || !strings.Contains(stderr, c.want) {
			t.Errorf("%q: exit %d, stderr %q; want 2 saying %q", c.args, code, stderr, c.want)
		}
	}
}

// scenario check reads the folder a run printed as well as its run.json,
// and judges it (this fixture is a recorded failing run: exit 1).
func TestScenarioCheckAcceptsRunFolder(t *testing.T) {
	t.Parallel()
	dir := "../../checker/testdata/runs/crash-after-expiry-seed961212"
	for _, arg := range []string{dir, filepath.Join(dir, "run.json")} {
		code, stdout, stderr := runCLI(t, "scenario", "check", arg)
		if code != 1 || !strings.Contains(stdout, "VERDICT FAIL crash-after-expiry (row 2*) seed=961212") {
			t.Errorf("check %s: exit %d\n%s%s", arg, code, stdout, stderr)
		}
	}
}

// A record of a run that was not judged (its final state unreadable, a
// signal) is checked again as ERROR, exit 3, as scenario run printed it,
// never FAIL whatever its counts say; beside a failing record, FAIL wins.
func TestScenarioCheckNotJudged_Exit3(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile("../../checker/testdata/runs/crash-after-expiry-seed961212/run.json")
	if err != nil {
		t.Fatal(err)
	}
	var raw map[string]any
	if err := json.Unmarshal(b, &raw); err != nil {
		t.Fatal(err)
	}
	raw["not_judged"] = "snapshot: read outbox: connection refused"
	nj, _ := json.Marshal(raw)
	path := filepath.Join(t.TempDir(), "run.json")
	if err := os.WriteFile(path, nj, 0o644); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr := runCLI(t, "scenario", "check", path)
	if code != 3 || !strings.Contains(stdout, "VERDICT ERROR crash-after-expiry (row 2*) seed=961212: not judged: snapshot: read outbox: connection refused") ||
		strings.Contains(stdout, "FAIL") {
		t.Errorf("check a not-judged record: exit %d\n%s%s", code, stdout, stderr)
	}
	code, stdout, stderr = runCLI(t, "scenario", "check", path, "../../checker/testdata/runs/crash-after-expiry-seed961212")
	if code != 1 || !strings.Contains(stdout, "VERDICT ERROR") || !strings.Contains(stdout, "VERDICT FAIL") {
		t.Errorf("check a not-judged and a failing record: exit %d\n%s%s", code, stdout, stderr)
	}
}

func TestSelectScenarios(t *testing.T) {
	t.Parallel()
	names := func(l []*scenario.Scenario) string {
		var out []string
		for _, s := range l {
			out = append(out, s.Name)
		}
		return strings.Join(out, ",")
	}
	for _, c := range []struct {
		names   []string
		pattern string
		want    string
	}{
		{[]string{"vendor-5xx", "confirm-timeout", "vendor-5xx"}, "", "vendor-5xx,confirm-timeout"},
		{nil, "^vendor-(5xx|timeout)$", "vendor-timeout,vendor-5xx"},
		{[]string{"vendor-5xx", "confirm-timeout"}, "confirm", "confirm-timeout"},
		{[]string{"all"}, "^stale-relay$", "stale-relay"},
	} {
		l, err := selectScenarios(c.names, c.pattern)
		if err != nil || names(l) != c.want {
			t.Errorf("%v -run %q: got %s, %v; want %s", c.names, c.pattern, names(l), err, c.want)
		}
	}
	all, _ := selectScenarios([]string{"all"}, "")
	if len(all) != len(catalogue.Named()) {
		t.Errorf("all: %d scenarios, catalogue has %d", len(all), len(catalogue.Named()))
	}
}

// A FAIL outweighs an ERROR, which outweighs a PASS; each maps to its
// exit code.
func TestOutcomeExitCodes(t *testing.T) {
	t.Parallel()
	pass := scenarios.Result{}
	fail := scenarios.Result{Verdict: checker.Verdict{Duplicated: 1}}
	errd := scenarios.Result{NotJudged: errors.New("set up: no database")}
	for _, c := range []struct {
		rs   []scenarios.Result
		want int
	}{
		{[]scenarios.Result{pass, pass}, 0},
		{[]scenarios.Result{pass, errd}, 3},
		{[]scenarios.Result{errd, fail, pass}, 1},
		{[]scenarios.Result{{Verdict: checker.Verdict{Duplicated: 1}, NotJudged: errors.New("interrupted")}}, 3},
	} {
		var outs []scenarios.Outcome
		for _, r := range c.rs {
			outs = append(outs, r.Outcome())
		}
		got := exitCode(t.Context(), "scenario", commands["scenario"], outcomeErr(scenarios.Worst(outs...)), os.Stderr)
		if got != c.want {
			t.Errorf("%v: exit %d, want %d", outs, got, c.want)
		}
	}
}

// explore's summary: a schedule not judged is counted apart, never as one
// that broke the contract; one a cancel kept from starting is not counted.
func TestTallySchedules(t *testing.T) {
	t.Parallel()
	runs := []explore.ScheduleRun{
		{Index: 0, Result: scenarios.Result{Name: "s0"}},
		{Index: 1, Result: scenarios.Result{Name: "s1", Verdict: checker.Verdict{Duplicated: 1}}},
		{Index: 2, Result: scenarios.Result{Name: "s2", Verdict: checker.Verdict{Stuck: 6}, NotJudged: errors.New("preflight: RabbitMQ unreachable")}},
		{Index: 3},
	}
	ran, failed, errored := tallySchedules(runs)
	if ran != 3 || len(failed) != 1 || failed[0].Index != 1 || len(errored) != 1 || errored[0].Index != 2 {
		t.Errorf("ran %d, failed %v, errored %v", ran, failed, errored)
	}
}

// --json is one object per scenario; --junit a JUnit report where FAIL is
// a failure and ERROR an error.
func TestCIOutput(t *testing.T) {
	t.Parallel()
	rs := []scenarios.Result{
		{Name: "a", Row: "1", Seed: 7, Duration: time.Second},
		{Name: "b", Row: "2", Seed: 7, Verdict: checker.Verdict{Duplicated: 1}, Artifacts: "artifacts/runs/b-seed7"},
		{Name: "c", Row: "3", Seed: 7, NotJudged: errors.New("preflight: Postgres unreachable")},
	}
	var b strings.Builder
	for _, r := range rs {
		if err := writeJSONResult(&b, r); err != nil {
			t.Fatal(err)
		}
	}
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	if len(lines) != 3 {
		t.Fatalf("want 3 JSON lines, got %q", b.String())
	}
	var got []jsonResult
	for _, l := range lines {
		var j jsonResult
		if err := json.Unmarshal([]byte(l), &j); err != nil {
			t.Fatal(err)
		}
		got = append(got, j)
	}
	if got[0].Verdict != "PASS" || got[1].Verdict != "FAIL" || got[1].Counts.Duplicated != 1 || got[1].Artifacts == "" ||
		got[2].Verdict != "ERROR" || !strings.Contains(got[2].Error, "unreachable") || got[0].Seed != 7 {
		t.Fatalf("JSON lines: %+v", got)
	}
	path := filepath.Join(t.TempDir(), "sub", "junit.xml")
	if err := writeJUnit(path, rs, 3*time.Second); err != nil {
		t.Fatal(err)
	}
	raw, _ := os.ReadFile(path)
	var doc junitSuites
	if err := xml.Unmarshal(raw, &doc); err != nil {
		t.Fatalf("%v\n%s", err, raw)
	}
	s := doc.Suites[0]
	if s.Tests != 3 || s.Failures != 1 || s.Errors != 1 || s.Cases[1].Failure == nil || s.Cases[2].Error == nil || s.Cases[0].Failure != nil {
		t.Fatalf("JUnit: %s", raw)
	}
}

// A request that would run nothing is a usage error (exit 2), never a
// vacuous pass: no schedule, an empty shard or selection, no repeat, no
// cell that applies.
func TestVacuousRequests_Exit2(t *testing.T) {
	t.Parallel()
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"explore", "--checks", "0"}, "--checks 0"},
		{[]string{"explore", "--bug", "nosuch"}, "unknown canary \"nosuch\""},
		{[]string{"explore", "--bug", "shared-returns", "--ledger", "x.jsonl"}, "--bug with --ledger"},
		{[]string{"explore", "--checks", "2", "--shard", "3/8"}, "shard 3/8 of a budget of 2 schedules holds none"},
		{[]string{"scenario", "run", "confirm-timeout", "--shard", "2/3"}, "shard 2/3 of the 1 scenarios selected holds none"},
		{[]string{"report", "--run", "^no-such-scenario$"}, "matches no scenario"},
		{[]string{"simulate", "capacity", "--repeat", "0"}, "at least one run"},
		{[]string{"simulate", "capacity", "--ad-repeat", "0"}, "at least one run"},
		{[]string{"crashpoints", "--sample", "-1"}, "--sample"},
		{[]string{"crashpoints", "--parallel", "0"}, "--parallel"},
	}
	for _, p := range peers.All() {
		for _, s := range catalogue.PeerCases() {
			if ok, _ := catalogue.PeerCaseApplies(s, p); !ok {
				cases = append(cases, struct {
					args []string
					want string
				}{[]string{"peers", "--impls", p.Name, "--cases", s.Name, "--out", "", "--save", ""}, "every cell would be n/a"})
				break
			}
		}
	}
	for _, c := range cases {
		code, stdout, stderr := runCLI(t, c.args...)
		if code != 2 || !strings.Contains(stderr, c.want) || strings.Contains(stdout, "PASS") {
			t.Errorf("%q: exit %d, stderr %q; want 2 saying %q", c.args, code, stderr, c.want)
		}
	}
}

// A crash-point selection that holds no point (a process the workload
// never runs) is a usage error once discovery has shown it empty.
func TestCrashpointsEmptySelection_Exit2(t *testing.T) {
	testenv.Require(t)
	t.Parallel()
	// The discovery run's pods are this command's own binary.
	cmd := exec.Command(binary(t), "crashpoints", "--workload", "one", "--process", "reconciler", "--artifacts", "")
	cmd.Env = append(os.Environ(), "OUTBOXCHAOS_PG_URL="+testenv.PGURL(), "OUTBOXCHAOS_AMQP_URL="+testenv.AMQPURL())
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	_ = cmd.Run()
	if code := cmd.ProcessState.ExitCode(); code != 2 || !strings.Contains(stderr.String(), "holds no crash point") || strings.Contains(stdout.String(), "explored") {
		t.Errorf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout.String(), stderr.String())
	}
}

// An unknown scenario name (or none) says why first, then lists the
// valid names: the reason is the first line, not the 65th.
func TestUnknownScenario_ReasonBeforeNames(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"scenario", "run", "no-such-scenario"}, `unknown scenario "no-such-scenario"`},
		{[]string{"scenario", "run"}, "want scenario names"},
		{[]string{"scenario", "show", "no-such-scenario"}, `unknown scenario "no-such-scenario"`},
		{[]string{"scenario", "show"}, "usage: outboxchaos scenario show NAME"},
	} {
		code, _, stderr := runCLI(t, c.args...)
		first, _, _ := strings.Cut(stderr, "\n")
		if code != 2 || !strings.Contains(first, c.want) || !strings.Contains(stderr, "valid scenario names:\n  "+catalogue.Names()[0]) {
			t.Errorf("%q: exit %d, stderr:\n%s\nwant its first line to say %q, the names after", c.args, code, stderr, c.want)
		}
	}
}

// epipeWriter is a stdout whose reader went away.
type epipeWriter struct{}

func (epipeWriter) Write([]byte) (int, error) {
	return 0, &os.PathError{Op: "write", Path: "/dev/stdout", Err: syscall.EPIPE}
}

// `outboxchaos scenario list | head -1`: a closed stdout ends the command
// quietly, with the status a shell gives a process SIGPIPE killed, and
// nothing on stderr; whether the command noticed the failed write or not.
func TestBrokenPipe_QuietExit141(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{{"scenario", "list"}, {"version"}, {"help"}} {
		ctx, cancel := context.WithCancelCause(context.Background())
		var stderr bytes.Buffer
		code := run(ctx, args, pipeWatch{epipeWriter{}, cancel}, &stderr)
		cancel(nil)
		if code != 141 || stderr.Len() != 0 {
			t.Errorf("%q into a closed pipe: exit %d, stderr %q; want 141 and nothing said", args, code, stderr.String())
		}
	}
}

// readJUnit reads the JUnit report at path.
func readJUnit(t *testing.T, path string) junitSuite {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("no JUnit report: %v", err)
	}
	var doc junitSuites
	if err := xml.Unmarshal(raw, &doc); err != nil || len(doc.Suites) != 1 {
		t.Fatalf("JUnit report %s: %v\n%s", path, err, raw)
	}
	return doc.Suites[0]
}

// jsonLines decodes scenario run --json's output.
func jsonLines(t *testing.T, out string) []jsonResult {
	t.Helper()
	var rs []jsonResult
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		var j jsonResult
		if err := json.Unmarshal([]byte(l), &j); err != nil {
			t.Fatalf("not a JSON line: %q: %v", l, err)
		}
		rs = append(rs, j)
	}
	return rs
}

// A preflight that fails (a service unreachable) judges nothing, and the
// machine-readable outputs say so: one ERROR JSON line and one ERROR
// JUnit test case, named preflight and giving the service and why.
func TestPreflightFailure_MachineReadableError(t *testing.T) {
	t.Setenv("OUTBOXCHAOS_PG_URL", closedPG)
	dir := t.TempDir()
	junit := filepath.Join(dir, "scenarios.xml")
	code, stdout, stderr := runCLI(t, "scenario", "run", "confirm-timeout", "--json", "--junit", junit, "--artifacts", "")
	rs := jsonLines(t, stdout)
	if code != 3 || len(rs) != 1 || rs[0].Name != "preflight" || rs[0].Verdict != "ERROR" ||
		!strings.HasPrefix(rs[0].Error, "preflight: Postgres at") || !strings.Contains(rs[0].Error, "unreachable") {
		t.Errorf("scenario run --json: exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	s := readJUnit(t, junit)
	if s.Tests != 1 || s.Errors != 1 || s.Cases[0].Name != "preflight" || s.Cases[0].Error == nil || !strings.Contains(s.Cases[0].Error.Message, "unreachable") {
		t.Errorf("scenario run --junit: %+v", s)
	}
	junit = filepath.Join(dir, "explore.xml")
	code, _, stderr = runCLI(t, "explore", "--checks", "1", "--junit", junit, "--artifacts", "")
	s = readJUnit(t, junit)
	if code != 3 || s.Errors != 1 || s.Cases[0].Name != "preflight" || s.Cases[0].Error == nil || !strings.Contains(s.Cases[0].Error.Message, "Postgres") {
		t.Errorf("explore --junit: exit %d, %+v\nstderr:\n%s", code, s, stderr)
	}
}

// A signal that ends a run before any scenario could run (here: before its
// preflight answered) is an ERROR JSON line and JUnit test case naming
// the signal, besides stderr's line.
func TestSignalBeforeAnyRun_MachineReadableError(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancelCause(context.Background())
	cancel(signalError{syscall.SIGINT})
	junit := filepath.Join(t.TempDir(), "junit.xml")
	var stdout, stderr bytes.Buffer
	code := run(ctx, []string{"scenario", "run", "confirm-timeout", "--json", "--junit", junit, "--artifacts", ""}, &stdout, &stderr)
	rs := jsonLines(t, stdout.String())
	if code != 3 || len(rs) != 1 || rs[0].Verdict != "ERROR" || !strings.Contains(rs[0].Error, "interrupted by signal SIGINT") ||
		!strings.Contains(stderr.String(), "interrupted by signal SIGINT: not judged (ERROR)") {
		t.Errorf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout.String(), stderr.String())
	}
	s := readJUnit(t, junit)
	if s.Errors != 1 || s.Cases[0].Error == nil || !strings.Contains(s.Cases[0].Error.Message, "interrupted by signal SIGINT") {
		t.Errorf("JUnit: %+v", s)
	}
}
