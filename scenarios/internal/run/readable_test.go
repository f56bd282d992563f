package run

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/outboxchaos/outboxchaos/checker"
	"github.com/outboxchaos/outboxchaos/history"
	"github.com/outboxchaos/outboxchaos/rig"
)

// timeline writes entries as a run's Timeline, each at +0.1 s × its index.
func timeline(lines ...[2]string) string {
	entries := make([]rig.Entry, len(lines))
	for i, l := range lines {
		entries[i] = rig.Entry{At: time.Duration(i+1) * 100 * time.Millisecond, Source: l[0], Text: l[1]}
	}
	var b strings.Builder
	for _, e := range entries {
		b.WriteString(e.Format(rig.SourceWidth(entries)) + "\n")
	}
	return b.String()
}

func event(pod, name string, attrs ...any) history.Event {
	ev := history.Event{Pod: pod, Name: name, Attrs: map[string]any{}}
	for i := 0; i+1 < len(attrs); i += 2 {
		ev.Attrs[attrs[i].(string)] = attrs[i+1]
	}
	return ev
}

// decisiveRun is a run in which notification-outbox-1 reached the phone
// twice, notification-outbox-2 once and notification-outbox-3 expired
// with its alert.
func decisiveRun() Result {
	return Result{
		Timeline: timeline(
			[2]string{"harness", "scenario x: schema s"},
			[2]string{"faults", "latency on rabbitmq-relay injected: stream=downstream latency=1500ms"},
			[2]string{"faults", "injected latency 1.5s on rabbitmq-relay downstream"},
			[2]string{"faults", "armed kill-point relay.after-publish:1"},
			[2]string{"relay-1", "KILLPOINT relay.after-publish hit 1"},
			[2]string{"worker-1", "vendor call [vendor-call] message_id=notification-outbox-1 outcome=SENT"},
			[2]string{"worker-1", "vendor call [vendor-call] message_id=notification-outbox-2 outcome=SENT"},
			// Its words say peek; its event says sent: not absorbed.
			[2]string{"worker-1", "acked [ack] message_id=notification-outbox-2 why=history row exists step=peek"},
			[2]string{"worker-1", "acked [ack] message_id=notification-outbox-1"},
			[2]string{"worker-2", "claim lost to another copy [claim-lost] message_id=notification-outbox-1"},
			[2]string{"worker-2", "vendor call [vendor-call] message_id=notification-outbox-1 outcome=SENT"},
			[2]string{"relay-1", "row finished [outbox-final] outbox_id=3 status=EXPIRED"},
			[2]string{"relay-1", "WARN EXPIRED outbox=3 [alert] kind=EXPIRED outbox_id=3"},
			[2]string{"harness", "clock not jumped: messages queued"},
			[2]string{"worker-3", "already processed [already-processed] message_id=notification-outbox-2"},
			[2]string{"worker-3", "delivered [delivery] message_id=notification-outbox-2"},
		),
		Events: []history.Event{
			event("worker-1", history.VendorCall, history.KeyMessageID, "notification-outbox-1"),
			event("worker-1", history.VendorCall, history.KeyMessageID, "notification-outbox-2"),
			event("worker-1", history.Ack, history.KeyMessageID, "notification-outbox-2", history.KeyStep, history.StepSent),
			event("worker-1", history.Ack, history.KeyMessageID, "notification-outbox-1", history.KeyStep, history.StepPeek),
			event("worker-2", history.ClaimLost, history.KeyMessageID, "notification-outbox-1"),
			event("worker-2", history.VendorCall, history.KeyMessageID, "notification-outbox-1"),
			event("relay-1", history.OutboxFinal, history.KeyOutboxID, float64(3), history.KeyStatus, "EXPIRED"),
			event("relay-1", history.Alert, history.KeyKind, "EXPIRED", history.KeyOutboxID, float64(3)),
			event("worker-3", history.AlreadyProcessed, history.KeyMessageID, "notification-outbox-2"),
			event("worker-3", history.Delivery, history.KeyMessageID, "notification-outbox-2"),
		},
		Faults: []checker.FaultRecord{
			{Kind: "latency", Fired: true, Detail: "latency 1.5s on rabbitmq-relay downstream: stream=downstream"},
			{Kind: "kill-point", Fired: true, Detail: "kill-point relay.after-publish:1: hit 1"},
		},
		State: checker.State{
			Intents: []string{"K:1", "K:2", "K:3"},
			Outbox: []checker.OutboxRow{
				{ID: 1, DedupKey: "K:1", Status: "PUBLISHED"},
				{ID: 2, DedupKey: "K:2", Status: "PUBLISHED"},
				{ID: 3, DedupKey: "K:3", Status: "EXPIRED"},
			},
			Ledger: []checker.HandsetEntry{
				{RefKey: "notification-outbox-1"}, {RefKey: "notification-outbox-1"}, {RefKey: "notification-outbox-2"},
			},
			Alerts:  []checker.AlertRecord{{Kind: "EXPIRED", OutboxID: 3}},
			Settled: true,
		},
	}
}

// TestDecisive: the lines that decided a verdict are found from the
// run's history and fault records, not from the lines' words.
func TestDecisive(t *testing.T) {
	t.Parallel()
	r := decisiveRun()
	got := map[int]string{}
	for _, d := range Decisive(r, rig.ParseTimeline(r.Timeline)) {
		got[d.Line] = d.Why
		if d.Event != nil && !strings.Contains(d.Entry.Text, "["+d.Event.Name+"]") {
			t.Errorf("line %d %q decided by event %s", d.Line, d.Entry.Text, d.Event.Name)
		}
	}
	want := map[int]string{
		2: DecidedFault, 3: DecidedFault, 4: DecidedFired,
		5: DecidedTwice, 8: DecidedAbsorbed, 9: DecidedAbsorbed, 10: DecidedTwice,
		11: DecidedLoss, 12: DecidedAlert, 14: DecidedAbsorbed,
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Decisive = %v, want %v", got, want)
	}
}

// TestReadableTimeline: the short timeline keeps every decisive line (an
// absorbed copy no notable event shows too), marks them, and drops the
// rest that is not notable; verbose keeps every line.
func TestReadableTimeline(t *testing.T) {
	t.Parallel()
	r := decisiveRun()
	short := FormatLines(ReadableTimeline(r, false))
	all := FormatLines(ReadableTimeline(r, true))
	raw := strings.Split(strings.TrimSuffix(r.Timeline, "\n"), "\n")
	if len(all) != len(raw) {
		t.Fatalf("verbose: %d lines, want the %d of the timeline", len(all), len(raw))
	}
	marked := 0
	for i, l := range all {
		if strings.HasPrefix(l, Marker) {
			marked++
			if l != Marker+raw[i][1:] {
				t.Errorf("marked line %q, want the marker in place of the first space of %q", l, raw[i])
			}
		} else if l != raw[i] {
			t.Errorf("verbose line %d = %q, want %q", i, l, raw[i])
		}
	}
	if marked != 10 {
		t.Errorf("verbose: %d lines marked, want 10:\n%s", marked, strings.Join(all, "\n"))
	}
	text := strings.Join(short, "\n")
	if !strings.Contains(text, Marker+"  +1.500s  worker-3  already processed") {
		t.Errorf("the absorbed copy is not shown and marked:\n%s", text)
	}
	if strings.Contains(text, "[delivery]") {
		t.Errorf("a delivery, neither notable nor decisive, is shown:\n%s", text)
	}
}

// TestFoldClock: the clock lines between two lines of the harness acting
// fold into one where the first was; a wait with one keeps it.
func TestFoldClock(t *testing.T) {
	t.Parallel()
	r := Result{Timeline: timeline(
		[2]string{"harness", "scenario x: schema s"},
		[2]string{"harness", "clock not jumped: messages queued"},
		[2]string{"worker-1", "vendor call [vendor-call] message_id=notification-outbox-1"},
		[2]string{"harness", "clock not jumped: outbox row 8 is being published"},
		[2]string{"harness", "clock jumped 1.5s to 10:00:03.020: nothing in flight, next due outbox row 3's lease"},
		[2]string{"harness", "clock not jumped: messages queued"},
		[2]string{"faults", "injected stall on rabbitmq-relay upstream"},
		[2]string{"harness", "clock not jumped: stall on rabbitmq-relay upstream is in place"},
		[2]string{"job-2", "started (pid 9)"},
		[2]string{"harness", "clock jumped 200ms to 10:00:04.000: nothing in flight, next due a"},
		[2]string{"relay-1", "claimed rows [claim] count=1"},
		[2]string{"harness", "clock jumped 350ms to 10:00:05.000: nothing in flight, next due b"},
	)}
	var got []string
	for _, l := range ReadableTimeline(r, false) {
		got = append(got, l.Source+": "+l.Text)
	}
	want := []string{
		"harness: scenario x: schema s",
		"harness: clock: jumped 1× by 1.5s, not jumped 3× (messages queued ×2, outbox row 8 is being published) until +0.600s",
		"worker-1: vendor call [vendor-call] message_id=notification-outbox-1",
		"faults: injected stall on rabbitmq-relay upstream",
		"harness: clock not jumped: stall on rabbitmq-relay upstream is in place",
		"job-2: started (pid 9)",
		"harness: clock: jumped 2× by 550ms until +1.200s",
		"relay-1: claimed rows [claim] count=1",
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("folded:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if n := len(ReadableTimeline(r, true)); n != 12 {
		t.Errorf("verbose: %d lines, want all 12", n)
	}
}

// TestFoldClockManyReasons: a wait names its first three reasons, then
// how many more.
func TestFoldClockManyReasons(t *testing.T) {
	t.Parallel()
	var lines []Line
	for i, why := range []string{"a", "b", "c", "d", "e"} {
		lines = append(lines, Line{Entry: rig.Entry{At: time.Duration(i) * time.Second, Source: "harness", Text: clockNotJumped + why}})
	}
	got := FoldClock(lines)
	if len(got) != 1 || got[0].Text != "clock: not jumped 5× (a, b, c, …+2) until +4.000s" {
		t.Errorf("FoldClock = %+v", got)
	}
}

// TestClockLinesAreJumps: the lines FoldClock folds are the ones the
// harness's clock writes (jump.go).
func TestClockLinesAreJumps(t *testing.T) {
	t.Parallel()
	src, err := os.ReadFile("jump.go")
	if err != nil {
		t.Fatal(err)
	}
	for _, format := range []string{`"` + clockNotJumped + `%s"`, `"` + clockJumped + `%s to %s: `} {
		if !strings.Contains(string(src), format) {
			t.Errorf("jump.go no longer writes %s: FoldClock would not fold its lines", format)
		}
	}
}

func passed(intents int) checker.Verdict {
	return checker.Verdict{Intents: intents, DeliveredOnce: intents,
		Invariants: []checker.Result{{Name: "nothing-twice", Valid: true}, {Name: "true-alerts", Valid: true}}}
}

// TestInWords: the verdict in words, pointing at the lines that decided it.
func TestInWords(t *testing.T) {
	t.Parallel()
	absorbedOnce := timeline(
		[2]string{"faults", "injected latency 1.5s on rabbitmq-relay downstream"},
		[2]string{"worker-1", "acked [ack] message_id=notification-outbox-8 why=history row exists step=peek"},
	)
	peek := event("worker-1", history.Ack, history.KeyMessageID, "notification-outbox-8", history.KeyStep, history.StepPeek)
	latency := []checker.FaultRecord{{Kind: "latency", Fired: true, Detail: "latency 1.5s on rabbitmq-relay downstream: x"}}

	twice := decisiveRun()
	twice.Verdict = checker.Verdict{Intents: 3, DeliveredOnce: 1, Duplicated: 1, LostVisibly: 1,
		Invariants: []checker.Result{{Name: "nothing-unexpected", Valid: true}, {Name: "nothing-twice", Violations: 1}},
		Details: []string{"lost visibly: notification-outbox-3 EXPIRED with alert",
			"duplicated: K:1 (notification-outbox-1) reached the handset 2 times"}}

	broken := passed(6)
	broken.Invariants = append(broken.Invariants,
		checker.Result{Name: "backoff", Violations: 2}, checker.Result{Name: "claim-order", Violations: 1})
	broken.Details = []string{"backoff: row 1 waits 100ms, want 200ms", "backoff: row 2 waits 100ms, want 200ms", "row 3 claimed late"}

	for name, c := range map[string]struct {
		r    Result
		want string
	}{
		"pass": {Result{Verdict: passed(6)}, "PASS: 6 of 6 delivered once"},
		"pass, a copy absorbed": {Result{Verdict: passed(18), Faults: latency, Timeline: absorbedOnce, Events: []history.Event{peek}},
			"PASS: 18 of 18 delivered once under 1 fault; a second copy of notification-outbox-8 reached worker-1, the inbox absorbed it (+0.200s)"},
		"pass, copies absorbed and alerts": {
			Result{Verdict: func() checker.Verdict { v := passed(6); v.DeliveredOnce, v.LostVisibly = 5, 1; return v }(),
				Timeline: timeline(
					[2]string{"worker-1", "acked [ack] message_id=notification-outbox-8 step=peek"},
					[2]string{"worker-2", "claim lost to another copy [claim-lost] message_id=notification-outbox-8"},
					[2]string{"relay-1", "WARN EXPIRED [alert] kind=EXPIRED"},
					[2]string{"relay-1", "WARN EXPIRED [alert] kind=EXPIRED"},
					[2]string{"relay-1", "WARN RELAY_ATTEMPTS [alert] kind=RELAY_ATTEMPTS"},
				),
				Events: []history.Event{peek,
					event("worker-2", history.ClaimLost, history.KeyMessageID, "notification-outbox-8"),
					event("relay-1", history.Alert, history.KeyKind, "EXPIRED"),
					event("relay-1", history.Alert, history.KeyKind, "EXPIRED"),
					event("relay-1", history.Alert, history.KeyKind, "RELAY_ATTEMPTS"),
				}},
			"PASS: 5 of 6 delivered once, 1 lost visibly, each with its alert; 2 more copies of 1 message reached the workers, " +
				"the inbox absorbed each (first: worker-1 +0.100s); 3 alerts raised: EXPIRED ×2, RELAY_ATTEMPTS (first: relay-1 +0.300s)"},
		"fail, twice": {twice,
			"FAIL: notification-outbox-1 reached a phone twice, sent by worker-1 +0.600s and worker-2 +1.100s (nothing-twice)"},
		"fail, invariants": {Result{Verdict: broken},
			"FAIL: backoff: row 1 waits 100ms, want 200ms (backoff); 1 more like it; also broke claim-order"},
		"fail, a rule": {Result{Verdict: passed(6), Err: errors.New("fault latency on x never fired\nits detail")},
			"FAIL: fault latency on x never fired"},
		"fail, a rule and the contract": {Result{Verdict: broken, Err: errors.New("step 4 (await): timed out after 30s " + strings.Repeat("waiting ", 20))},
			"FAIL: backoff: row 1 waits 100ms, want 200ms (backoff); 1 more like it; also broke claim-order; and step 4 (await): timed out after 30s " +
				strings.TrimSuffix(strings.Repeat("waiting ", 10), " ") + "…"},
		"error": {Result{Verdict: passed(6), NotJudged: errors.New("snapshot: read outbox: connection refused\nmore")},
			"ERROR: not judged, so it says nothing of the contract: snapshot: read outbox: connection refused"},
	} {
		if got := c.r.InWords(); got != c.want {
			t.Errorf("%s:\n got %s\nwant %s", name, got, c.want)
		}
	}
}

// TestRecordedRunsExplained: on every recorded run, each decisive pod
// line is the event the history has for it, the short timeline is no
// longer than the whole, and the words begin with the run's outcome.
func TestRecordedRunsExplained(t *testing.T) {
	t.Parallel()
	dirs, err := filepath.Glob("../../../checker/testdata/runs/*/timeline.txt")
	if err != nil || len(dirs) == 0 {
		t.Fatalf("no recorded runs with a timeline: %v", err)
	}
	for _, path := range dirs {
		dir := filepath.Dir(path)
		b, err := os.ReadFile(filepath.Join(dir, "run.json"))
		if err != nil {
			t.Fatal(err)
		}
		var rec checker.Record
		if err := json.Unmarshal(b, &rec); err != nil {
			t.Fatalf("%s: %v", dir, err)
		}
		tl, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		r := Result{Name: rec.Scenario, State: rec.State, Faults: rec.Faults, Events: rec.History, Timeline: string(tl)}
		r.Verdict, r.Err = checker.Verify(rec)
		if rec.NotJudged != "" {
			r.NotJudged = errors.New(rec.NotJudged)
		}
		for _, d := range Decisive(r, rig.ParseTimeline(r.Timeline)) {
			if d.Event != nil && (d.Event.Pod != d.Entry.Source || eventName(d.Entry.Text) != d.Event.Name) {
				t.Errorf("%s: line %q decided by %s's %s", dir, d.Entry.Text, d.Event.Pod, d.Event.Name)
			}
		}
		if short, all := len(ReadableTimeline(r, false)), len(ReadableTimeline(r, true)); short > all {
			t.Errorf("%s: short timeline %d lines, whole %d", dir, short, all)
		}
		if w := r.InWords(); !strings.HasPrefix(w, r.Outcome().String()+": ") {
			t.Errorf("%s: %s is %s", dir, w, r.Outcome())
		}
	}
	// One run read closely: a worker died after its send, the next sent again.
	dir := "../../../checker/testdata/runs/crashpoint-one-worker-http-vendor-message-after-1-seed1-check-then-act"
	b, err := os.ReadFile(filepath.Join(dir, "run.json"))
	if err != nil {
		t.Fatal(err)
	}
	var rec checker.Record
	if err := json.Unmarshal(b, &rec); err != nil {
		t.Fatal(err)
	}
	tl, err := os.ReadFile(filepath.Join(dir, "timeline.txt"))
	if err != nil {
		t.Fatal(err)
	}
	r := Result{State: rec.State, Faults: rec.Faults, Events: rec.History, Timeline: string(tl)}
	r.Verdict, r.Err = checker.Verify(rec)
	var whys []string
	for _, d := range Decisive(r, rig.ParseTimeline(r.Timeline)) {
		whys = append(whys, d.Entry.Source+" "+d.Why)
	}
	if want := []string{"faults fault", "worker-1 fired", "worker-2 twice"}; !reflect.DeepEqual(whys, want) {
		t.Errorf("decisive lines %v, want %v", whys, want)
	}
	if w := r.InWords(); !strings.HasPrefix(w, "FAIL: notification-outbox-1 reached a phone twice, sent by worker-2 ") ||
		!strings.HasSuffix(w, " (nothing-twice)") {
		t.Errorf("words: %s", w)
	}
}
