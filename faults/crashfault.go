package faults

import (
	"context"
	"fmt"

	"github.com/outboxchaos/outboxchaos/system/crashpoint"
)

// CrashPoint SIGKILLs a pod at one of its automatic crash points
// (system/crashpoint): a side of a step, on its Nth hit. It fired when a
// pod armed with it died there (exit 137 after "KILLPOINT <step>:<side> hit").
type CrashPoint struct {
	Point crashpoint.Point
}

func (c *CrashPoint) setting() string { return crashpoint.EnvVar + "=" + c.Point.String() }

// Family is "crash-point".
func (c *CrashPoint) Family() string { return KindCrashPoint }

// Target is the step.
func (c *CrashPoint) Target() string { return c.Point.Step }

// PodEnv arms the crash point.
func (c *CrashPoint) PodEnv(World) []string { return []string{c.setting()} }

// Inject does nothing: the pod's environment arms it.
func (c *CrashPoint) Inject(context.Context, World) error { return nil }

// Recover does nothing: a restarted pod is started without it.
func (c *CrashPoint) Recover(context.Context, World) error { return nil }

// Fired reports whether an armed pod died at the point.
func (c *CrashPoint) Fired(w World) (bool, string) {
	for _, p := range armedPods(w, c.setting()) {
		select {
		case <-p.Done():
		default:
			continue
		}
		if name, hit := p.Killpoint(); hit && name == c.Point.Name() && p.ExitCode() == 137 {
			return true, p.Name() + " killed at " + c.Point.String()
		}
	}
	return false, "no pod died at " + c.Point.String()
}

func (c *CrashPoint) String() string { return "crash-point " + c.Point.String() }

func buildCrashPoint(s Spec) (Fault, error) {
	hit, err := hitOf(s)
	if err != nil {
		return nil, err
	}
	p, err := crashpoint.ParsePoint(fmt.Sprintf("%s:%d", s.Point, hit))
	if err != nil {
		return nil, err
	}
	return &CrashPoint{Point: p}, nil
}
