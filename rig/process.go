package rig

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"slices"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/outboxchaos/outboxchaos/history"
	"github.com/outboxchaos/outboxchaos/system/killpoint"
)

// outputGrace is how long a pod's output is still read after the process
// exits, in case something it started keeps the pipes open.
const outputGrace = 2 * time.Second

// PodSpec describes a pod: one child process of the pipeline.
type PodSpec struct {
	Name   string   // unique in a run; tags the pod's timeline entries and events
	Binary string   // path of the executable
	Args   []string // arguments, without the program name
	Env    []string // KEY=VALUE entries appended to the harness's environment
}

// Pod is a running (or finished) child process. Its stdout and stderr are
// read line by line: every line goes to Output and to the Timeline, JSON
// lines with an "event" key become Events, and a kill-point's dying line is
// remembered.
type Pod struct {
	spec PodSpec
	drop []string // environment keys removed from the inherited environment
	tl   *Timeline
	cmd  *exec.Cmd
	done chan struct{}

	mu       sync.Mutex
	exitCode int
	lines    []string
	events   []history.Event
	kpName   string
	kpHit    bool
	pausedAt string // the pause-point it froze at, if any
	cpu      time.Duration
}

// StartPod starts the process spec describes and returns once it runs. If
// ctx ends, the process is killed. The harness's own OUTBOXCHAOS_KILLPOINT
// is never inherited: a pod is armed only by spec.Env. tl may be nil.
func StartPod(ctx context.Context, spec PodSpec, tl *Timeline) (*Pod, error) {
	return startPod(ctx, spec, tl, nil)
}

func startPod(ctx context.Context, spec PodSpec, tl *Timeline, drop []string) (*Pod, error) {
	if spec.Name == "" || spec.Binary == "" {
		return nil, errors.New("start pod: name and binary are required")
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("start pod %s: stdout pipe: %w", spec.Name, err)
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		closeAll(outR, outW)
		return nil, fmt.Errorf("start pod %s: stderr pipe: %w", spec.Name, err)
	}
	cmd := exec.CommandContext(ctx, spec.Binary, spec.Args...)
	cmd.Env = podEnv(spec.Env, drop)
	cmd.Stdout, cmd.Stderr = outW, errW
	cmd.SysProcAttr = podSysProcAttr()
	if err := cmd.Start(); err != nil {
		closeAll(outR, outW, errR, errW)
		return nil, fmt.Errorf("start pod %s (%s): %w", spec.Name, spec.Binary, err)
	}
	// The child holds its own copies; ours must go so that EOF arrives.
	closeAll(outW, errW)

	p := &Pod{spec: spec, drop: drop, tl: tl, cmd: cmd, done: make(chan struct{}), exitCode: -1}
	tl.Add(spec.Name, "started (pid %d)", cmd.Process.Pid)
	slog.Debug("pod started", "pod", spec.Name, "pid", cmd.Process.Pid)
	var readers sync.WaitGroup
	readers.Add(2)
	go p.read(outR, &readers)
	go p.read(errR, &readers)
	go p.wait(&readers, outR, errR)
	return p, nil
}

// podEnv is the harness's environment without killpoint.EnvVar and
// killpoint.PauseEnvVar, the keys in
// drop and the keys spec sets, followed by spec.
func podEnv(spec, drop []string) []string {
	skip := map[string]bool{killpoint.EnvVar: true, killpoint.PauseEnvVar: true}
	for _, k := range drop {
		skip[k] = true
	}
	for _, kv := range spec {
		skip[envKey(kv)] = true
	}
	var env []string
	for _, kv := range os.Environ() {
		if !skip[envKey(kv)] {
			env = append(env, kv)
		}
	}
	return append(env, spec...)
}

func envKey(kv string) string {
	k, _, _ := strings.Cut(kv, "=")
	return k
}

func closeAll(files ...*os.File) {
	for _, f := range files {
		_ = f.Close()
	}
}

// read consumes one output stream line by line.
func (p *Pod) read(r io.Reader, wg *sync.WaitGroup) {
	defer wg.Done()
	br := bufio.NewReader(r)
	for {
		line, err := br.ReadString('\n')
		if line = strings.TrimRight(line, "\r\n"); line != "" {
			p.line(line)
		}
		if err != nil {
			return
		}
	}
}

// wait reaps the process, then lets the readers drain the pipes before Done.
func (p *Pod) wait(readers *sync.WaitGroup, pipes ...*os.File) {
	err := p.cmd.Wait()
	drained := make(chan struct{})
	go func() {
		readers.Wait()
		close(drained)
	}()
	grace := time.NewTimer(outputGrace)
	select {
	case <-drained:
	case <-grace.C:
		p.tl.Add(p.spec.Name, "output still open %s after exit; stopped reading", outputGrace)
	}
	grace.Stop()
	closeAll(pipes...) // unblocks the readers if they are still reading
	<-drained

	code := exitCode(p.cmd.ProcessState)
	p.mu.Lock()
	p.exitCode = code
	if ps := p.cmd.ProcessState; ps != nil {
		p.cpu = ps.UserTime() + ps.SystemTime()
	}
	p.mu.Unlock()
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		p.tl.Add(p.spec.Name, "wait failed: %v", err)
	}
	p.tl.Add(p.spec.Name, "exited: %s (code %d)", p.cmd.ProcessState, code)
	slog.Debug("pod exited", "pod", p.spec.Name, "code", code)
	close(p.done)
}

// CPU is the CPU time (user + system) the pod's process used, known once
// it exited (0 before).
func (p *Pod) CPU() time.Duration {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.cpu
}

// exitCode returns the exit status, or 128+signal for a signal death.
func exitCode(ps *os.ProcessState) int {
	if ps == nil {
		return -1
	}
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	return ps.ExitCode()
}

// line records one output line.
func (p *Pod) line(text string) {
	ev, isEvent, summary := parseLine(p.spec.Name, text, time.Now())
	kp, isKP := parseKillpoint(text)
	pp, isPause := parsePausepoint(text)
	p.mu.Lock()
	p.lines = append(p.lines, text)
	if isEvent {
		p.events = append(p.events, ev)
	}
	if isKP {
		p.kpName, p.kpHit = kp, true
	}
	if isPause {
		p.pausedAt = pp
	}
	p.mu.Unlock()
	p.tl.Add(p.spec.Name, "%s", summary)
}

// parseKillpoint recognises "KILLPOINT <name> hit <n>", the line
// system/killpoint writes before dying.
func parseKillpoint(line string) (string, bool) {
	f := strings.Fields(line)
	if len(f) == 4 && f[0] == "KILLPOINT" && f[2] == "hit" {
		return f[1], true
	}
	return "", false
}

// parsePausepoint recognises "PAUSEPOINT <name> hit <n>", the line
// system/killpoint writes before the process stops itself.
func parsePausepoint(line string) (string, bool) {
	f := strings.Fields(line)
	if len(f) == 4 && f[0] == "PAUSEPOINT" && f[2] == "hit" {
		return f[1], true
	}
	return "", false
}

// summaryAttrs is how many attributes a timeline summary shows.
const summaryAttrs = 4

// parseLine turns a JSON log line into an event (history.ParseLine) and a
// short timeline summary: level (unless INFO), msg, event and a few
// attributes. Other lines are summarised as themselves.
func parseLine(pod, text string, now time.Time) (history.Event, bool, string) {
	ev, m, isEvent := history.ParseLine(pod, text, now)
	if m == nil {
		return history.Event{}, false, text
	}
	attrs := history.Attrs(m)
	var b strings.Builder
	if lvl, _ := m["level"].(string); lvl != "" && lvl != "INFO" {
		b.WriteString(lvl + " ")
	}
	msg, _ := m["msg"].(string)
	b.WriteString(msg)
	if isEvent {
		fmt.Fprintf(&b, " [%s]", ev.Name)
	}
	// The pod name already says which instance and component it is; the
	// message and outbox ids come first because a timeline follows them.
	keys := make([]string, 0, len(attrs))
	for k := range attrs {
		if k != "instance" && k != "component" {
			keys = append(keys, k)
		}
	}
	sort.Slice(keys, func(i, j int) bool {
		pi, pj := summaryRank(keys[i]), summaryRank(keys[j])
		if pi != pj {
			return pi < pj
		}
		return keys[i] < keys[j]
	})
	for i, k := range keys {
		if i == summaryAttrs {
			fmt.Fprintf(&b, " …+%d", len(keys)-i)
			break
		}
		fmt.Fprintf(&b, " %s=%s", k, shortValue(attrs[k]))
	}
	return ev, isEvent, b.String()
}

// summaryRank orders the attributes a timeline shows first.
func summaryRank(k string) int {
	switch k {
	case "message_id":
		return 0
	case "outbox_id", "outcome", "status", "count":
		return 1
	case "code", "why", "reason", "kind":
		return 2
	}
	return 3
}

func shortValue(v any) string {
	var s string
	switch v := v.(type) {
	case string:
		s = v
	case map[string]any, []any:
		j, _ := json.Marshal(v)
		s = string(j)
	default:
		s = fmt.Sprint(v)
	}
	const limit = 48
	if r := []rune(s); len(r) > limit {
		s = string(r[:limit]) + "…"
	}
	return s
}

// Name returns the pod's name.
func (p *Pod) Name() string { return p.spec.Name }

// Spec returns the spec the pod was started from.
func (p *Pod) Spec() PodSpec { return p.spec }

// Env is the KEY=VALUE environment the pod was started with.
func (p *Pod) Env() []string { return p.spec.Env }

// Done is closed once the process has exited and all its output is read.
func (p *Pod) Done() <-chan struct{} { return p.done }

// ExitCode returns -1 while the pod runs, then its exit status, or
// 128+signal if a signal killed it (137 for SIGKILL).
func (p *Pod) ExitCode() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.exitCode
}

// Killpoint returns the kill-point the pod reported dying at, and whether it
// reported one.
func (p *Pod) Killpoint() (name string, hit bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.kpName, p.kpHit
}

// Paused returns the pause-point the pod froze at ("" if it never did).
// It says the pod stopped itself there, not that it is still stopped.
func (p *Pod) Paused() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.pausedAt
}

// Frozen reports whether the pod is stopped at its pause-point now: it
// said it froze and the kernel shows it stopped.
func (p *Pod) Frozen() bool {
	return p.Paused() != "" && processStopped(p.cmd.Process.Pid)
}

// Continue resumes a pod frozen at a pause-point (SIGCONT). Continuing a
// running or finished pod is harmless.
func (p *Pod) Continue() error {
	select {
	case <-p.done:
		return nil
	default:
	}
	p.tl.Add(p.spec.Name, "SIGCONT")
	if err := p.cmd.Process.Signal(syscall.SIGCONT); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("continue pod %s: %w", p.spec.Name, err)
	}
	return nil
}

// Events returns a copy of the pod's events so far, in output order (stdout
// and stderr interleaved as read).
func (p *Pod) Events() []history.Event {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]history.Event(nil), p.events...)
}

// EventCount is how many events the pod has logged, copying none.
func (p *Pod) EventCount() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.events)
}

// LastOf returns the name of the pod's latest event named one of names,
// or "" if it logged none. It reads back from the newest event and copies
// nothing, so a look that asks it of every pod costs little however long
// they have run.
func (p *Pod) LastOf(names ...string) string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return history.LastOf(p.events, names...)
}

// Output returns every output line so far, newline-terminated.
func (p *Pod) Output() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.lines) == 0 {
		return ""
	}
	return strings.Join(p.lines, "\n") + "\n"
}

// Kill sends SIGKILL and waits until the pod is Done. Killing a finished pod
// is a no-op.
func (p *Pod) Kill() error {
	select {
	case <-p.done:
		return nil
	default:
	}
	p.tl.Add(p.spec.Name, "SIGKILL")
	if err := p.cmd.Process.Kill(); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("kill pod %s: %w", p.spec.Name, err)
	}
	<-p.done
	return nil
}

// Stop sends SIGTERM and waits up to timeout for the pod to exit, then kills
// it. Either way it returns once the pod is Done; ExitCode tells which.
func (p *Pod) Stop(timeout time.Duration) error {
	select {
	case <-p.done:
		return nil
	default:
	}
	p.tl.Add(p.spec.Name, "SIGTERM")
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("stop pod %s: %w", p.spec.Name, err)
	}
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case <-p.done:
		return nil
	case <-t.C:
	}
	p.tl.Add(p.spec.Name, "still running %s after SIGTERM", timeout)
	return p.Kill()
}

// RestartOption changes the spec of a restarted pod.
type RestartOption func(*restartConfig)

type restartConfig struct {
	without []string
	env     []string
}

// RestartWithout removes keys from the restarted pod's environment, both
// from its spec and from what it inherits. killpoint.EnvVar and
// killpoint.PauseEnvVar are always removed; re-arm one with RestartWithEnv.
func RestartWithout(keys ...string) RestartOption {
	return func(c *restartConfig) { c.without = append(c.without, keys...) }
}

// RestartWithEnv sets KEY=VALUE entries in the restarted pod's spec,
// replacing earlier values of the same keys.
func RestartWithEnv(kv ...string) RestartOption {
	return func(c *restartConfig) { c.env = append(c.env, kv...) }
}

// Restart kills the pod if it still runs and starts a new process, with the
// same name, from the same spec minus its kill-point (a restarted pod does
// not die again at the same point unless re-armed with RestartWithEnv).
func (p *Pod) Restart(ctx context.Context, opts ...RestartOption) (*Pod, error) {
	cfg := restartConfig{without: []string{killpoint.EnvVar, killpoint.PauseEnvVar}}
	for _, o := range opts {
		o(&cfg)
	}
	if err := p.Kill(); err != nil {
		return nil, fmt.Errorf("restart pod %s: %w", p.spec.Name, err)
	}
	set := make(map[string]bool, len(cfg.env))
	for _, kv := range cfg.env {
		set[envKey(kv)] = true
	}
	spec := p.spec
	spec.Args = slices.Clone(p.spec.Args)
	spec.Env = nil
	for _, kv := range p.spec.Env {
		if k := envKey(kv); !slices.Contains(cfg.without, k) && !set[k] {
			spec.Env = append(spec.Env, kv)
		}
	}
	spec.Env = append(spec.Env, cfg.env...)
	drop := append(slices.Clone(p.drop), cfg.without...)
	p.tl.Add(p.spec.Name, "restarting")
	np, err := startPod(ctx, spec, p.tl, drop)
	if err != nil {
		return nil, fmt.Errorf("restart pod %s: %w", p.spec.Name, err)
	}
	return np, nil
}

// WaitExit waits until p has exited and its output is read, or ctx ends.
func WaitExit(ctx context.Context, p *Pod) error {
	select {
	case <-p.done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("waiting for pod %s to exit: %w", p.spec.Name, ctx.Err())
	}
}

// Freeze stops the pod (SIGSTOP) where it is, as a frozen host or a
// paused container would: it holds its connections and answers nothing
// until Continue. Freezing a finished pod is a no-op.
func (p *Pod) Freeze() error {
	select {
	case <-p.done:
		return nil
	default:
	}
	p.tl.Add(p.spec.Name, "SIGSTOP")
	if err := p.cmd.Process.Signal(syscall.SIGSTOP); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("freeze pod %s: %w", p.spec.Name, err)
	}
	return nil
}
