package faults

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/outboxchaos/outboxchaos/system/clock"
	"github.com/outboxchaos/outboxchaos/system/killpoint"
)

// armedPods returns the pods started with env among their settings.
func armedPods(w World, env string) []PodHandle {
	var out []PodHandle
	for _, p := range w.Pods() {
		if slices.ContainsFunc(p.Env(), func(kv string) bool { return arms(kv, env) }) {
			out = append(out, p)
		}
	}
	return out
}

// arms reports whether the environment entry kv carries setting: equal to
// it, or of its variable with the setting's value among kv's
// comma-separated ones (several points of one kind armed in one pod).
func arms(kv, setting string) bool {
	if kv == setting {
		return true
	}
	k, v, _ := strings.Cut(setting, "=")
	kk, vv, ok := strings.Cut(kv, "=")
	return ok && kk == k && slices.Contains(strings.Split(vv, ","), v)
}

// Killpoint SIGKILLs a pod on the Hit-th time it reaches Point. It fired
// when a pod armed with it died there (exit 137 after "KILLPOINT … hit").
type Killpoint struct {
	Point string
	Hit   int
}

func (k *Killpoint) setting() string {
	return fmt.Sprintf("%s=%s:%d", killpoint.EnvVar, k.Point, k.Hit)
}

// Family is "kill-point".
func (k *Killpoint) Family() string { return KindKillPoint }

// Target is the point's process ("relay", "worker", "job", …).
func (k *Killpoint) Target() string { return strings.SplitN(k.Point, ".", 2)[0] }

// PodEnv arms the kill-point.
func (k *Killpoint) PodEnv(World) []string { return []string{k.setting()} }

// Inject does nothing: the pod's environment arms it.
func (k *Killpoint) Inject(context.Context, World) error { return nil }

// Recover does nothing: a restarted pod is started without it.
func (k *Killpoint) Recover(context.Context, World) error { return nil }

// Fired reports whether an armed pod died at the point.
func (k *Killpoint) Fired(w World) (bool, string) {
	for _, p := range armedPods(w, k.setting()) {
		select {
		case <-p.Done():
		default:
			continue
		}
		if name, hit := p.Killpoint(); hit && name == k.Point && p.ExitCode() == 137 {
			return true, p.Name() + " killed at " + k.Point
		}
	}
	return false, "no pod died at " + k.Point
}

func (k *Killpoint) String() string { return fmt.Sprintf("kill-point %s:%d", k.Point, k.Hit) }

// Failpoint makes a named step fail in a pod (the Hit-th time). It fired
// when an armed pod wrote "FAILPOINT <point> hit".
type Failpoint struct {
	Point string
	Hit   int
}

func (f *Failpoint) setting() string {
	return fmt.Sprintf("%s=%s:%d", killpoint.FailEnvVar, f.Point, f.Hit)
}

// Family is "failpoint".
func (f *Failpoint) Family() string { return KindFailpoint }

// Target is the point's process.
func (f *Failpoint) Target() string { return strings.SplitN(f.Point, ".", 2)[0] }

// PodEnv arms the failpoint.
func (f *Failpoint) PodEnv(World) []string { return []string{f.setting()} }

// Inject does nothing: the pod's environment arms it.
func (f *Failpoint) Inject(context.Context, World) error { return nil }

// Recover does nothing: a restarted pod is started without it.
func (f *Failpoint) Recover(context.Context, World) error { return nil }

// Fired reports whether an armed pod hit the failpoint.
func (f *Failpoint) Fired(w World) (bool, string) {
	for _, p := range armedPods(w, f.setting()) {
		if strings.Contains(p.Output(), "FAILPOINT "+f.Point+" hit") {
			return true, p.Name() + " failed at " + f.Point
		}
	}
	return false, "no pod hit " + f.Point
}

func (f *Failpoint) String() string { return fmt.Sprintf("failpoint %s:%d", f.Point, f.Hit) }

// ClockStep starts a pod's virtual clock elsewhere than the run's: By
// ahead of the run's now, or At a time of day ("20:40", "+1d 08:00": the
// next day). It fired when a pod ran on that clock.
type ClockStep struct {
	By time.Duration
	At string

	env string
}

// Family is "clock".
func (c *ClockStep) Family() string { return KindClock }

// Target is the pods given the clock.
func (c *ClockStep) Target() string { return "pod clock" }

// PodEnv computes the clock setting from the run's now, once.
func (c *ClockStep) PodEnv(w World) []string {
	if c.env == "" {
		now := w.Now()
		t := now.Add(c.By)
		if c.At != "" {
			days, hh, mm, _ := parseAt(c.At)
			t = clock.At(clock.At(now, 12, 0).Add(time.Duration(days)*24*time.Hour), hh, mm)
		}
		c.env = "OUTBOXCHAOS_CLOCK=" + clock.NewVirtual(t, 1).Setting()
	}
	return []string{c.env}
}

// Inject does nothing: the pod's environment sets the clock.
func (c *ClockStep) Inject(context.Context, World) error { return nil }

// Recover does nothing.
func (c *ClockStep) Recover(context.Context, World) error { return nil }

// Fired reports whether a pod started on the clock.
func (c *ClockStep) Fired(w World) (bool, string) {
	if ps := armedPods(w, c.env); c.env != "" && len(ps) > 0 {
		return true, ps[0].Name() + " ran on " + c.String()
	}
	return false, "no pod ran on the stepped clock"
}

func (c *ClockStep) String() string {
	if c.At != "" {
		return "clock at " + c.At
	}
	return "clock +" + c.By.String()
}

// parseAt reads "hh:mm" or "+Nd hh:mm".
func parseAt(s string) (days, hh, mm int, err error) {
	rest := s
	if strings.HasPrefix(s, "+") {
		if _, err := fmt.Sscanf(s, "+%dd %d:%d", &days, &hh, &mm); err != nil {
			return 0, 0, 0, fmt.Errorf("clock at %q: want \"hh:mm\" or \"+1d hh:mm\"", s)
		}
	} else if _, err := fmt.Sscanf(rest, "%d:%d", &hh, &mm); err != nil {
		return 0, 0, 0, fmt.Errorf("clock at %q: want \"hh:mm\" or \"+1d hh:mm\"", s)
	}
	if hh < 0 || hh > 23 || mm < 0 || mm > 59 || days < 0 {
		return 0, 0, 0, fmt.Errorf("clock at %q: out of range", s)
	}
	return days, hh, mm, nil
}
