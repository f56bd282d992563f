package rig

import (
	"time"

	"github.com/outboxchaos/outboxchaos/system/clock"
	"github.com/outboxchaos/outboxchaos/system/config"
)

// ClockAt returns a virtual clock that reads t now and advances rate virtual
// seconds per real second. Hand it to every pod with ClockEnv so they agree.
func ClockAt(t time.Time, rate float64) *clock.Virtual {
	return clock.NewVirtual(t, rate)
}

// ClockEnv returns the "OUTBOXCHAOS_CLOCK=<setting>" entry that makes a pod
// read c. The setting carries c's real anchor, so pods started later still
// read the same time as c.
func ClockEnv(c *clock.Virtual) string {
	return config.EnvName("clock") + "=" + c.Setting()
}

// SeoulTime returns the instant y-mo-d h:mi:s in Asia/Seoul.
func SeoulTime(y, mo, d, h, mi, s int) time.Time {
	return time.Date(y, time.Month(mo), d, h, mi, s, 0, clock.Seoul)
}

// JustBefore returns the instant d before t (for example a clock set
// JustBefore(20:40, 2*time.Second) crosses the ad cut-off during the run).
func JustBefore(t time.Time, d time.Duration) time.Time {
	return t.Add(-d)
}
