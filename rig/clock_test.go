package rig

import (
	"strings"
	"testing"
	"time"

	"github.com/outboxchaos/outboxchaos/system/clock"
)

func TestSeoulTimeAndJustBefore(t *testing.T) {
	t.Parallel()
	cut := SeoulTime(2026, 3, 14, 20, 40, 0)
	if cut.Location() != clock.Seoul || cut.Hour() != 20 || cut.Minute() != 40 {
		t.Errorf("SeoulTime = %s", cut)
	}
	if got := cut.UTC(); got.Hour() != 11 { // Seoul is UTC+9, no DST
		t.Errorf("20:40 Seoul is %s UTC, want 11:40", got.Format("15:04"))
	}
	if got := JustBefore(cut, 2*time.Second); !got.Equal(cut.Add(-2 * time.Second)) {
		t.Errorf("JustBefore = %s", got)
	}
}

func TestClockEnvIsReadBackByPods(t *testing.T) {
	t.Parallel()
	start := SeoulTime(2026, 3, 14, 20, 39, 58)
	v := ClockAt(start, 1)
	kv := ClockEnv(v)
	key, setting, ok := strings.Cut(kv, "=")
	if !ok || key != "OUTBOXCHAOS_CLOCK" {
		t.Fatalf("ClockEnv = %q", kv)
	}
	c, err := clock.Parse(setting)
	if err != nil {
		t.Fatalf("Parse(%q): %v", setting, err)
	}
	if d := c.Now().Sub(v.Now()); d < -time.Second || d > time.Second {
		t.Errorf("pod clock differs from the harness clock by %s", d)
	}
	if now := c.Now(); now.Before(start) || now.After(start.Add(time.Minute)) {
		t.Errorf("pod clock reads %s, want just after %s", now, start)
	}
}
