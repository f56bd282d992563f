package rig

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/outboxchaos/outboxchaos/history"
	"github.com/outboxchaos/outboxchaos/system/killpoint"
)

// childEnv makes the test binary act as a pod instead of running tests; its
// value is the mode (see runChild).
const childEnv = "FAULTS_TEST_CHILD"

func TestMain(m *testing.M) {
	if mode := os.Getenv(childEnv); mode != "" {
		os.Exit(runChild(mode))
	}
	os.Exit(m.Run())
}

// runChild is the pod side of the process tests. It logs the way system/
// does: slog's JSON handler with an "event" attribute.
func runChild(mode string) int {
	out := slog.New(slog.NewJSONHandler(os.Stdout, nil))
	errLog := slog.New(slog.NewJSONHandler(os.Stderr, nil))
	switch mode {
	case "events":
		out.Info("row published", "event", "relay.published", "outbox_id", 3, "message_id", "notification-outbox-3")
		fmt.Println("plain text line")
		out.Info("no event here", "k", 1)
		errLog.Warn("claim lost", "event", "worker.claim-lost", "message_id", "notification-outbox-4")
		return 0
	case "serve": // exits 3 on SIGTERM
		sig := make(chan os.Signal, 1)
		signal.Notify(sig, syscall.SIGTERM)
		out.Info("ready", "event", "child.ready")
		<-sig
		out.Info("stopping", "event", "child.stopping")
		return 3
	case "stubborn": // ignores SIGTERM
		signal.Ignore(syscall.SIGTERM)
		out.Info("ready", "event", "child.ready")
		time.Sleep(time.Minute) // not synchronisation: the parent kills it
		return 0
	case "killpoint": // dies at the armed hit of relay.after-claim, if any
		// A process entry point arms its hooks itself, as cmd/outboxchaos does.
		if err := killpoint.ArmFromEnv(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 2
		}
		for i := 1; i <= 3; i++ {
			out.Info("hit", "event", "child.hit", "n", i)
			killpoint.Hit(killpoint.RelayAfterClaim)
		}
		out.Info("survived", "event", "child.survived")
		return 0
	case "env":
		out.Info("env", "event", "child.env",
			"foo", os.Getenv("FAULTS_TEST_FOO"), "killpoint", os.Getenv(killpoint.EnvVar))
		return 0
	}
	fmt.Fprintf(os.Stderr, "unknown child mode %q\n", mode)
	return 2
}

// startChild starts the test binary as a pod in mode, killed when the test
// ends.
func startChild(t *testing.T, name, mode string, tl *Timeline, env ...string) *Pod {
	t.Helper()
	bin, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	p, err := StartPod(t.Context(), PodSpec{
		Name:   name,
		Binary: bin,
		// A -race binary sleeps 1s before a normal exit unless told not to.
		Env: append([]string{childEnv + "=" + mode, "GORACE=atexit_sleep_ms=0"}, env...),
	}, tl)
	if err != nil {
		t.Fatalf("StartPod: %v", err)
	}
	t.Cleanup(func() { _ = p.Kill() })
	return p
}

func waitExit(t *testing.T, p *Pod) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	if err := WaitExit(ctx, p); err != nil {
		t.Fatalf("%v\noutput:\n%s", err, p.Output())
	}
}

func waitEvent(t *testing.T, p *Pod, name string) {
	t.Helper()
	err := WaitFor(t.Context(), 10*time.Second, "event "+name+" from "+p.Name(),
		func(context.Context) (bool, error) { return countEvents(p, name) > 0, nil })
	if err != nil {
		t.Fatalf("%v\noutput:\n%s", err, p.Output())
	}
}

func countEvents(p *Pod, name string) int {
	n := 0
	for _, e := range p.Events() {
		if e.Name == name {
			n++
		}
	}
	return n
}

func TestPodEventsAndOutput(t *testing.T) {
	t.Parallel()
	tl := NewTimeline()
	started := time.Now()
	p := startChild(t, "relay-1", "events", tl)
	waitExit(t, p)
	if p.ExitCode() != 0 {
		t.Errorf("ExitCode() = %d, want 0", p.ExitCode())
	}

	events := p.Events()
	if len(events) != 2 {
		t.Fatalf("got %d events, want 2: %+v", len(events), events)
	}
	byName := map[string]history.Event{}
	for _, e := range events {
		byName[e.Name] = e
	}
	pub, ok := byName["relay.published"]
	if !ok {
		t.Fatalf("no relay.published event in %+v", events)
	}
	if id, ok := pub.Int("outbox_id"); !ok || id != 3 {
		t.Errorf("outbox_id = %d, %t; want 3", id, ok)
	}
	if pub.Str("message_id") != "notification-outbox-3" || pub.Pod != "relay-1" {
		t.Errorf("event = %+v", pub)
	}
	if _, has := pub.Attrs["msg"]; has {
		t.Errorf("Attrs holds the standard key msg: %v", pub.Attrs)
	}
	if pub.Time.Before(started.Add(-time.Second)) || pub.Time.After(time.Now()) {
		t.Errorf("Time = %s, want the line's time (run started %s)", pub.Time, started)
	}
	if _, ok := byName["worker.claim-lost"]; !ok {
		t.Errorf("stderr event missing from %+v", events)
	}

	out := p.Output()
	for _, want := range []string{"plain text line", "no event here", "claim lost"} {
		if !strings.Contains(out, want) {
			t.Errorf("Output() lacks %q:\n%s", want, out)
		}
	}
	var summary bool
	for _, e := range tl.Entries() {
		if e.Source == "relay-1" && strings.HasPrefix(e.Text, "row published [relay.published] message_id=notification-outbox-3 outbox_id=3") {
			summary = true
		}
	}
	if !summary {
		t.Errorf("timeline lacks the short form of the JSON line:\n%s", timelineText(tl))
	}
}

func timelineText(tl *Timeline) string {
	var b strings.Builder
	_, _ = tl.WriteTo(&b)
	return b.String()
}

func TestPodKillExits137(t *testing.T) {
	t.Parallel()
	p := startChild(t, "worker-1", "serve", nil)
	waitEvent(t, p, "child.ready")
	if err := p.Kill(); err != nil {
		t.Fatalf("Kill: %v", err)
	}
	if !isExited(p) {
		t.Fatal("Done not closed after Kill returned")
	}
	if p.ExitCode() != 137 {
		t.Errorf("ExitCode() = %d, want 137", p.ExitCode())
	}
	if name, hit := p.Killpoint(); hit {
		t.Errorf("Killpoint() = %q, true for a plain kill", name)
	}
	if countEvents(p, "child.stopping") != 0 {
		t.Error("a SIGKILLed pod ran its SIGTERM handler")
	}
	if err := p.Kill(); err != nil {
		t.Errorf("second Kill: %v", err)
	}
}

func TestPodStopSendsSIGTERM(t *testing.T) {
	t.Parallel()
	p := startChild(t, "worker-1", "serve", nil)
	waitEvent(t, p, "child.ready")
	if err := p.Stop(10 * time.Second); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	if p.ExitCode() != 3 || countEvents(p, "child.stopping") != 1 {
		t.Errorf("ExitCode() = %d, stopping events = %d; want 3 and 1 (graceful SIGTERM)",
			p.ExitCode(), countEvents(p, "child.stopping"))
	}
}

func TestPodStopKillsAfterTimeout(t *testing.T) {
	t.Parallel()
	p := startChild(t, "worker-1", "stubborn", nil)
	waitEvent(t, p, "child.ready")
	if err := p.Stop(100 * time.Millisecond); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	if p.ExitCode() != 137 {
		t.Errorf("ExitCode() = %d, want 137 (SIGKILL after the SIGTERM timeout)", p.ExitCode())
	}
}

func TestPodKillpointAndRestart(t *testing.T) {
	t.Parallel()
	tl := NewTimeline()
	p := startChild(t, "relay-1", "killpoint", tl, killpoint.EnvVar+"="+killpoint.RelayAfterClaim+":2")
	waitExit(t, p)
	if p.ExitCode() != 137 {
		t.Errorf("ExitCode() = %d, want 137", p.ExitCode())
	}
	if name, hit := p.Killpoint(); !hit || name != killpoint.RelayAfterClaim {
		t.Errorf("Killpoint() = %q, %t; want %q, true", name, hit, killpoint.RelayAfterClaim)
	}
	if n := countEvents(p, "child.hit"); n != 2 {
		t.Errorf("%d hits before dying, want 2", n)
	}

	// A restart drops the kill-point: the new process runs through.
	r, err := p.Restart(t.Context())
	if err != nil {
		t.Fatalf("Restart: %v", err)
	}
	t.Cleanup(func() { _ = r.Kill() })
	waitExit(t, r)
	if r.Name() != "relay-1" || r.ExitCode() != 0 || countEvents(r, "child.survived") != 1 {
		t.Errorf("restarted %s: exit %d, survived %d; want relay-1, 0, 1\n%s",
			r.Name(), r.ExitCode(), countEvents(r, "child.survived"), r.Output())
	}
	if _, hit := r.Killpoint(); hit {
		t.Error("restarted pod reports a kill-point")
	}

	// Re-armed on purpose, it dies again.
	r2, err := r.Restart(t.Context(), RestartWithEnv(killpoint.EnvVar+"="+killpoint.RelayAfterClaim))
	if err != nil {
		t.Fatalf("Restart: %v", err)
	}
	t.Cleanup(func() { _ = r2.Kill() })
	waitExit(t, r2)
	if name, hit := r2.Killpoint(); !hit || name != killpoint.RelayAfterClaim || countEvents(r2, "child.hit") != 1 {
		t.Errorf("re-armed pod: Killpoint() = %q, %t after %d hits; want it to die at the first hit",
			name, hit, countEvents(r2, "child.hit"))
	}
	if !strings.Contains(timelineText(tl), "KILLPOINT "+killpoint.RelayAfterClaim+" hit 2") {
		t.Errorf("timeline lacks the kill-point line:\n%s", timelineText(tl))
	}
}

func TestPodRestartWithout(t *testing.T) {
	t.Parallel()
	p := startChild(t, "env", "env", nil, "FAULTS_TEST_FOO=bar", killpoint.EnvVar+"="+killpoint.RelayAfterClaim)
	waitExit(t, p)
	first := p.Events()
	if len(first) != 1 || first[0].Str("foo") != "bar" || first[0].Str("killpoint") != killpoint.RelayAfterClaim {
		t.Fatalf("first run saw %+v, want foo=bar and the kill-point", first)
	}
	r, err := p.Restart(t.Context(), RestartWithout("FAULTS_TEST_FOO"))
	if err != nil {
		t.Fatalf("Restart: %v", err)
	}
	t.Cleanup(func() { _ = r.Kill() })
	waitExit(t, r)
	second := r.Events()
	if len(second) != 1 || second[0].Str("foo") != "" || second[0].Str("killpoint") != "" {
		t.Errorf("restart saw %+v, want neither foo nor the kill-point", second)
	}
}

func TestWaitExitHonoursContext(t *testing.T) {
	t.Parallel()
	p := startChild(t, "worker-1", "serve", nil)
	waitEvent(t, p, "child.ready")
	if p.ExitCode() != -1 {
		t.Errorf("ExitCode() = %d while running, want -1", p.ExitCode())
	}
	ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
	defer cancel()
	err := WaitExit(ctx, p)
	if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "worker-1") {
		t.Errorf("WaitExit on a running pod = %v, want a deadline error naming the pod", err)
	}
}

func TestStartPodErrors(t *testing.T) {
	t.Parallel()
	if _, err := StartPod(t.Context(), PodSpec{Name: "x", Binary: "/nonexistent/binary"}, nil); err == nil {
		t.Error("StartPod of a missing binary succeeded")
	}
	if _, err := StartPod(t.Context(), PodSpec{Binary: "/bin/true"}, nil); err == nil {
		t.Error("StartPod without a name succeeded")
	}
}

func TestParseLine(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	tests := []struct {
		line    string
		event   string
		summary string
	}{
		{"plain", "", "plain"},
		{"{not json", "", "{not json"},
		{`{"time":"2026-01-01T00:00:00Z","level":"INFO","msg":"m","k":1}`, "", "m k=1"},
		{`{"time":"2026-01-01T00:00:00Z","level":"ERROR","msg":"m","event":"e","a":"x","b":2,"c":true,"d":null,"e2":5}`,
			"e", "ERROR m [e] a=x b=2 c=true d=<nil> …+1"},
	}
	for _, tt := range tests {
		ev, isEvent, summary := parseLine("pod", tt.line, now)
		if isEvent != (tt.event != "") || ev.Name != tt.event || summary != tt.summary {
			t.Errorf("parseLine(%q) = %q, %t, %q; want event %q, summary %q", tt.line, ev.Name, isEvent, summary, tt.event, tt.summary)
		}
	}
	ev, _, _ := parseLine("pod", `{"msg":"m","event":"e"}`, now)
	if !ev.Time.Equal(now) {
		t.Errorf("Time = %s for a line without time, want the read time %s", ev.Time, now)
	}
	if name, ok := parseKillpoint("KILLPOINT worker.after-claim hit 3"); !ok || name != "worker.after-claim" {
		t.Errorf("parseKillpoint = %q, %t", name, ok)
	}
	if _, ok := parseKillpoint("KILLPOINT is a word"); ok {
		t.Error("parseKillpoint accepted a line that is not a kill-point report")
	}
}

func TestPodLastOf(t *testing.T) {
	t.Parallel()
	p := &Pod{events: []history.Event{{Name: "worker.delivery"}, {Name: "worker.sent"}, {Name: "worker.ack"}, {Name: "worker.delivery"}, {Name: "worker.sent"}}}
	for _, c := range []struct {
		names []string
		want  string
	}{
		{[]string{"worker.delivery", "worker.ack"}, "worker.delivery"},
		{[]string{"worker.ack"}, "worker.ack"},
		{[]string{"worker.sent", "worker.delivery"}, "worker.sent"},
		{[]string{"relay.published"}, ""},
		{nil, ""},
	} {
		if got := p.LastOf(c.names...); got != c.want {
			t.Errorf("LastOf(%v) = %q, want %q", c.names, got, c.want)
		}
	}
}
