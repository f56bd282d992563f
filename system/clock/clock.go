// Package clock owns the notion of "now" for every time-of-day rule of the
// pipeline (relay window, 20:40 ad cut-off, 20:50 worker cut-off, scheduled
// dates, leases and timeouts).
//
// Nothing in system/ calls time.Now or SQL now() for a decision: it asks a
// Clock, and passes the answer to SQL as a parameter. A Virtual clock is a
// virtual start time plus a rate, anchored to a real instant; its Setting is a
// string that several processes can share (through OUTBOXCHAOS_CLOCK) so they
// all agree on the time.
package clock

import (
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"
	_ "time/tzdata" // Asia/Seoul must resolve on machines without zoneinfo.
)

// Seoul is the time zone every time-of-day rule is stated in.
var Seoul = mustLoad("Asia/Seoul")

func mustLoad(name string) *time.Location {
	loc, err := time.LoadLocation(name)
	if err != nil {
		panic(fmt.Sprintf("load time zone %s: %v", name, err))
	}
	return loc
}

// Clock tells the time. Implementations are safe for concurrent use.
type Clock interface {
	Now() time.Time
}

// Real is the wall clock.
type Real struct{}

// Now returns the wall-clock time in Asia/Seoul.
func (Real) Now() time.Time { return time.Now().In(Seoul) }

// Virtual is a clock that started at Start when the real clock read Anchor and
// advances Rate virtual seconds per real second. Jump moves it.
type Virtual struct {
	mu     sync.Mutex
	start  time.Time
	anchor time.Time
	rate   float64
}

// NewVirtual returns a virtual clock reading start now, advancing at rate.
func NewVirtual(start time.Time, rate float64) *Virtual {
	return &Virtual{start: start, anchor: time.Now(), rate: rate}
}

// Now returns the virtual time in Asia/Seoul.
func (v *Virtual) Now() time.Time {
	v.mu.Lock()
	defer v.mu.Unlock()
	elapsed := time.Since(v.anchor)
	return v.start.Add(time.Duration(float64(elapsed) * v.rate)).In(Seoul)
}

// Set makes the clock read t from now on, keeping its rate.
func (v *Virtual) Set(t time.Time) {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.start, v.anchor = t, time.Now()
}

// Setting returns the shareable form of this clock (see Parse).
func (v *Virtual) Setting() string {
	v.mu.Lock()
	defer v.mu.Unlock()
	return fmt.Sprintf("%s@%d*%s", v.start.Format(time.RFC3339Nano), v.anchor.UnixNano(),
		strconv.FormatFloat(v.rate, 'g', -1, 64))
}

// Parse reads a clock setting. The empty string and "real" give the wall
// clock; "file:PATH" a File clock. Otherwise the form is
// START[@ANCHOR_UNIX_NANOS][*RATE]: START is an
// RFC 3339 time, ANCHOR the real instant at which the clock read START
// (default: now), RATE virtual seconds per real second (default 1). Two
// processes given the same setting read the same time.
func Parse(s string) (Clock, error) {
	s = strings.TrimSpace(s)
	if s == "" || s == "real" {
		return Real{}, nil
	}
	if path, ok := strings.CutPrefix(s, FilePrefix); ok {
		return OpenFile(path)
	}
	rate := 1.0
	if i := strings.LastIndexByte(s, '*'); i >= 0 {
		r, err := strconv.ParseFloat(s[i+1:], 64)
		if err != nil || r < 0 {
			return nil, fmt.Errorf("clock setting %q: rate must be a non-negative number", s)
		}
		rate, s = r, s[:i]
	}
	anchor := time.Now()
	if i := strings.LastIndexByte(s, '@'); i >= 0 {
		n, err := strconv.ParseInt(s[i+1:], 10, 64)
		if err != nil {
			return nil, fmt.Errorf("clock setting %q: anchor must be unix nanoseconds", s)
		}
		anchor, s = time.Unix(0, n), s[:i]
	}
	start, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return nil, fmt.Errorf("clock setting: start time %q is not RFC 3339: %w", s, err)
	}
	return &Virtual{start: start, anchor: anchor, rate: rate}, nil
}

// At returns the instant at hh:mm on the Seoul calendar day of t.
func At(t time.Time, hh, mm int) time.Time {
	t = t.In(Seoul)
	return time.Date(t.Year(), t.Month(), t.Day(), hh, mm, 0, 0, Seoul)
}

// Date returns the Seoul calendar date of t at midnight Seoul.
func Date(t time.Time) time.Time { return At(t, 0, 0) }
