package reports

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/outboxchaos/outboxchaos/checker"
	"github.com/outboxchaos/outboxchaos/history"
	"github.com/outboxchaos/outboxchaos/scenarios"
	"github.com/outboxchaos/outboxchaos/scenarios/catalogue"
	"github.com/outboxchaos/outboxchaos/scenarios/explore"
)

func sample() scenarios.Result {
	ev := func(at int, pod, name string, attrs map[string]any) history.Event {
		return history.Event{At: time.Duration(at) * time.Millisecond, Pod: pod, Name: name, Attrs: attrs}
	}
	return scenarios.Result{
		Name: "confirm-timeout", Row: "4", Seed: 7,
		Events: []history.Event{
			ev(10, "relay-1", "claim", map[string]any{"count": 1.0, "ids": []any{1.0}}),
			ev(20, "relay-1", "publish", map[string]any{"message_id": "notification-outbox-1", "outcome": "timed-out"}),
			ev(30, "worker-1", "delivery", map[string]any{"message_id": "notification-outbox-1", "redelivered": false}),
			ev(40, "worker-1", "vendor-call", map[string]any{"message_id": "notification-outbox-1", "outcome": "SENT", "code": "1000"}),
			ev(50, "worker-1", "ack", map[string]any{"message_id": "notification-outbox-1", "why": "sent"}),
			ev(60, "cleanup-1", "alert", map[string]any{"kind": "SENDING_TIMEOUT"}),
		},
		Faults: []checker.FaultRecord{
			{Kind: "latency", Target: "rabbitmq-relay", Start: 15 * time.Millisecond, At: 35 * time.Millisecond, Fired: true},
			{Kind: "kill-point", Target: "worker-1", At: 45 * time.Millisecond, Fired: true, Detail: "worker.after-send"},
		},
	}
}

// TestSequenceDiagram: the diagram follows the focus message, marks the
// failed publish with -x, shades the fault window and balances rect/end.
func TestSequenceDiagram(t *testing.T) {
	t.Parallel()
	d := Sequence(sample())
	for _, want := range []string{
		"sequenceDiagram", "participant Cleanup",
		"Relay-xRabbitMQ: publish notification-outbox-1 (timed-out)",
		"Worker->>Vendor: send refkey=notification-outbox-1 (SENT 1000)",
		"Worker->>RabbitMQ: ack (sent)",
		"Note over Worker: SIGKILL at worker.after-send",
		"rect rgb(", "Cleanup->>Ops: alert SENDING_TIMEOUT",
	} {
		if !strings.Contains(d, want) {
			t.Errorf("diagram lacks %q:\n%s", want, d)
		}
	}
	if strings.Count(d, "rect rgb(") != strings.Count(d, "\n    end\n") {
		t.Errorf("unbalanced rect/end:\n%s", d)
	}
	if strings.Contains(d, "<nil>") {
		t.Errorf("diagram prints <nil>:\n%s", d)
	}
}

// TestWriteReliability renders the failure table, the canary table and a
// diagram per case.
func TestWriteReliability(t *testing.T) {
	t.Parallel()
	r := sample()
	r.Verdict = checker.Verdict{Intents: 1, DeliveredOnce: 1}
	var b strings.Builder
	err := WriteReliability(&b, Reliability{
		Env:       Environment{Go: "go1.x", Postgres: "15", RabbitMQ: "3.10", Cores: 2, Commit: "abc"},
		Named:     []scenarios.Result{r},
		Catalogue: catalogue.Named(),
		Canaries:  []explore.CanaryResult{{Bug: "retry-unknown"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{"| 4 | `confirm-timeout` |", "1/1", "`make scenario NAME=confirm-timeout SEED=7`",
		"| `retry-unknown` | **SURVIVED** |", "```mermaid"} {
		if !strings.Contains(out, want) {
			t.Errorf("report lacks %q", want)
		}
	}
}

// TestWriteReconciled compares the same schedules without and with a
// reconciler, splitting the visible losses by cause.
func TestWriteReconciled(t *testing.T) {
	t.Parallel()
	run := func(v checker.Verdict) PropertyRun { return PropertyRun{Result: scenarios.Result{Verdict: v}} }
	off := run(checker.Verdict{Intents: 3, DeliveredOnce: 1, LostVisibly: 2, Details: []string{
		"lost visibly: notification-outbox-1 inbox ERROR with alert", "lost visibly: notification-outbox-2 EXPIRED with alert"}})
	on := run(checker.Verdict{Intents: 3, DeliveredOnce: 2, LostVisibly: 1, Resent: 1, Details: []string{
		"lost visibly: notification-outbox-2 EXPIRED with alert"}})
	var b strings.Builder
	if err := WriteReliability(&b, Reliability{Property: []PropertyRun{off}, Reconciled: []PropertyRun{on}}); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{"| delivered once | 1 | 2 |", "| lost visibly | 2 | 1 |",
		"| … " + causeOrder[0] + " | 1 | 0 |", "| … " + causeOrder[2] + " | 1 | 1 |", "| re-sent | 0 | 1 |"} {
		if !strings.Contains(out, want) {
			t.Errorf("report lacks %q in:\n%s", want, out)
		}
	}
}

// TestWriteCrashPoints: the crash-point section counts the points explored
// per workload and process, and lists each violation with its replay line.
func TestWriteCrashPoints(t *testing.T) {
	t.Parallel()
	ok := scenarios.Result{Name: "a", Verdict: checker.Verdict{Intents: 1, DeliveredOnce: 1}}
	bad := scenarios.Result{Name: "b", Seed: 3, Verdict: checker.Verdict{Intents: 1, LostSilently: 1}}
	w1, _ := explore.ParseCrashTarget("worker:sql:update-1a2b3c:after:1")
	r1, _ := explore.ParseCrashTarget("relay:amqp:confirm:before:2")
	var b strings.Builder
	p := func(format string, args ...any) { b.WriteString(fmt.Sprintf(format, args...)) }
	writeCrashPoints(p, []CrashRun{{Workload: "one", Points: 50, Bound: 3, Outcomes: []explore.CrashOutcome{
		{Workload: "one", Target: w1, Result: ok, Fired: true},
		{Workload: "one", Target: r1, Result: bad, Fired: true},
	}}})
	out := b.String()
	for _, want := range []string{"| `one` | 50 (3) | 2 | worker 1 (1), relay 1 (1) | 1 |", "2 crash points explored, 1 violations.",
		"--only 'relay:amqp:confirm:before:2' --seed 3"} {
		if !strings.Contains(out, want) {
			t.Errorf("crash-point section lacks %q:\n%s", want, out)
		}
	}
}

// A run not judged (ERROR) is counted apart, never as a violation: in the
// failure table, the random schedules, the crash points and their totals.
func TestNotJudgedIsNoViolation(t *testing.T) {
	t.Parallel()
	ok := sample()
	ok.Verdict = checker.Verdict{Intents: 1, DeliveredOnce: 1}
	// An unreachable RabbitMQ: the counts say stuck, but nothing was judged.
	errd := sample()
	errd.Name, errd.Seed, errd.Verdict = "stale-relay", 9, checker.Verdict{Intents: 6, Stuck: 6}
	errd.NotJudged = errors.New("snapshot: RabbitMQ unreachable")
	w1, _ := explore.ParseCrashTarget("worker:sql:update-1a2b3c:after:1")
	r1, _ := explore.ParseCrashTarget("relay:amqp:confirm:before:2")
	var b strings.Builder
	err := WriteReliability(&b, Reliability{
		Named:     []scenarios.Result{ok, errd},
		Catalogue: catalogue.Named(),
		Property:  []PropertyRun{{Result: ok}, {Result: errd}},
		Crash: []CrashRun{{Workload: "one", Points: 50, Bound: 3, Outcomes: []explore.CrashOutcome{
			{Workload: "one", Target: w1, Result: ok, Fired: true},
			{Workload: "one", Target: r1, Result: errd, Fired: true},
		}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{
		"1 of 2 named scenarios matched their row, 1 not judged (ERROR).",
		"| **ERROR** (not judged) |",
		"(0 failed the contract, 1 not judged (ERROR))",
		"| 1 | 1 | 0 | 0 | 0 | 0 | 0 | 0 | 0 |\n", // the schedules' totals: the unjudged run's 6 intents, stuck=6 left out
		"| `one` | 50 (3) | 1 | worker 1 (1) | 0 | 1 |",
		"1 crash points explored, 0 violations; 1 more not judged",
		"- not judged: `one` relay:amqp:confirm:before:2: not judged: snapshot: RabbitMQ unreachable",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("report lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "**FAIL**") {
		t.Errorf("a run not judged shows as FAIL:\n%s", out)
	}
}
