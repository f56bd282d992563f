package faults

import (
	"context"
	"fmt"
	"strings"

	"github.com/outboxchaos/outboxchaos/system/killpoint"
)

// Pausepoint freezes a pod on the Hit-th time it reaches Point (a
// kill-point's name): the pod stops itself (SIGSTOP) holding what it holds,
// until a resume fault or the end of the run continues it. It fired when an
// armed pod froze there; Recover continues every pod it froze.
type Pausepoint struct {
	Point string
	Hit   int
}

func (f *Pausepoint) setting() string {
	return fmt.Sprintf("%s=%s:%d", killpoint.PauseEnvVar, f.Point, f.Hit)
}

// Family is "pause-point".
func (f *Pausepoint) Family() string { return KindPausePoint }

// Target is the point's process.
func (f *Pausepoint) Target() string { return strings.SplitN(f.Point, ".", 2)[0] }

// PodEnv arms the pause-point.
func (f *Pausepoint) PodEnv(World) []string { return []string{f.setting()} }

// Inject does nothing: the pod's environment arms it.
func (f *Pausepoint) Inject(context.Context, World) error { return nil }

// Recover continues every armed pod that froze at the point.
func (f *Pausepoint) Recover(_ context.Context, w World) error {
	for _, p := range armedPods(w, f.setting()) {
		if p.Paused() == f.Point {
			if err := p.Continue(); err != nil {
				return err
			}
		}
	}
	return nil
}

// Fired reports whether an armed pod froze at the point.
func (f *Pausepoint) Fired(w World) (bool, string) {
	for _, p := range armedPods(w, f.setting()) {
		if p.Paused() == f.Point {
			return true, p.Name() + " froze at " + f.Point
		}
	}
	return false, "no pod froze at " + f.Point
}

func (f *Pausepoint) String() string { return fmt.Sprintf("pause-point %s:%d", f.Point, f.Hit) }

// Resume continues a pod frozen at a pause-point (SIGCONT), at a step of
// the scenario's choosing. It fired when the pod had frozen and was sent
// the signal; a pod that never froze is left alone (not fired: a random
// schedule's pause-point may never be reached).
type Resume struct {
	Pod   string
	fired bool
}

// Family is "resume".
func (r *Resume) Family() string { return KindResume }

// Target is the pod.
func (r *Resume) Target() string { return r.Pod }

// Inject continues the pod; it must have frozen at its pause-point.
func (r *Resume) Inject(_ context.Context, w World) error {
	p, err := w.Pod(r.Pod)
	if err != nil {
		return err
	}
	if p.Paused() == "" {
		w.Logf("faults", "resume %s: it never froze at a pause-point", r.Pod)
		return nil
	}
	if err := p.Continue(); err != nil {
		return err
	}
	r.fired = true
	return nil
}

// Momentary: the pod is continued as it is injected.
func (*Resume) Momentary() {}

// Recover does nothing: a continued pod runs on.
func (r *Resume) Recover(context.Context, World) error { return nil }

// Fired reports whether the pod was continued.
func (r *Resume) Fired(World) (bool, string) {
	if r.fired {
		return true, r.Pod + " continued"
	}
	return false, r.Pod + " not continued"
}

func (r *Resume) String() string { return "resume " + r.Pod }

func buildPausepoint(s Spec) (Fault, error) {
	if err := oneOf("pause-point", s.Point, killpoint.Names); err != nil {
		return nil, err
	}
	hit, err := hitOf(s)
	return &Pausepoint{Point: s.Point, Hit: hit}, err
}

func buildResume(s Spec) (Fault, error) {
	if s.Pod == "" {
		return nil, fmt.Errorf("needs pod")
	}
	return &Resume{Pod: s.Pod}, nil
}
