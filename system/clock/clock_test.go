package clock_test

import (
	"strconv"
	"testing"
	"time"

	"github.com/outboxchaos/outboxchaos/system/clock"
)

func abs(d time.Duration) time.Duration {
	if d < 0 {
		return -d
	}
	return d
}

// Two processes given the same Setting read the same time: the setting
// carries the anchor, so a clock parsed an hour after the original was
// started does not restart from its start time.
func TestParse_SettingRoundTripAgreesAcrossParses(t *testing.T) {
	t.Parallel()
	start := time.Date(2025, 5, 1, 10, 0, 0, 0, clock.Seoul)
	began := time.Now()
	hourAgo := began.Add(-time.Hour).UnixNano()
	orig, err := clock.Parse(start.Format(time.RFC3339Nano) + "@" + strconv.FormatInt(hourAgo, 10) + "*1")
	if err != nil {
		t.Fatal(err)
	}
	v, ok := orig.(*clock.Virtual)
	if !ok {
		t.Fatalf("Parse gave %T, want *clock.Virtual", orig)
	}
	s := v.Setting()
	a, err := clock.Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	b, err := clock.Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	// At rate 1 the reads may differ by the real time between them, and
	// no more (slack: the wall clock the anchors are read on against the
	// monotonic one that times the reads).
	const slack = time.Millisecond
	before := time.Now()
	na, nb, nv := a.Now(), b.Now(), v.Now()
	between := time.Since(before)
	if d := abs(na.Sub(nb)); d > between+slack {
		t.Fatalf("two parses of %q disagree by %s, read %s apart", s, d, between)
	}
	if d := abs(na.Sub(nv)); d > between+slack {
		t.Fatalf("parsed clock and original disagree by %s, read %s apart", d, between)
	}
	if d := na.Sub(start.Add(time.Hour)); d < -slack || d > time.Since(began)+slack {
		t.Fatalf("parsed clock reads %s, want %s (start + the hour since the anchor) plus at most the %s since", na, start.Add(time.Hour), time.Since(began))
	}
	if na.Location() != clock.Seoul {
		t.Fatalf("clock reads in %s, want Asia/Seoul", na.Location())
	}
	// A fast clock round-trips its rate too.
	fast := clock.NewVirtual(start, 60)
	f, err := clock.Parse(fast.Setting())
	if err != nil {
		t.Fatal(err)
	}
	before = time.Now()
	nf, nfast := f.Now(), fast.Now()
	between = time.Since(before)
	if d := abs(nf.Sub(nfast)); d > 60*(between+slack) {
		t.Fatalf("rate-60 clock: parsed and original disagree by %s, read %s apart", d, between)
	}
}

func TestParse_RateOneWithFixedAnchor(t *testing.T) {
	t.Parallel()
	start := time.Date(2025, 5, 1, 20, 39, 0, 0, clock.Seoul)
	anchor := time.Now().Add(-10 * time.Second)
	c, err := clock.Parse(start.Format(time.RFC3339Nano) + "@" + strconv.FormatInt(anchor.UnixNano(), 10) + "*1")
	if err != nil {
		t.Fatal(err)
	}
	got := c.Now()
	want := start.Add(10 * time.Second)
	if got.Before(want) || got.After(want.Add(5*time.Second)) {
		t.Fatalf("Now = %s, want about %s", got, want)
	}
	// Rate 0 freezes the clock.
	f, err := clock.Parse(start.Format(time.RFC3339) + "*0")
	if err != nil {
		t.Fatal(err)
	}
	if !f.Now().Equal(start) {
		t.Fatalf("frozen clock reads %s, want %s", f.Now(), start)
	}
}

func TestParse_RealAndEmpty(t *testing.T) {
	t.Parallel()
	for _, s := range []string{"", "real", "  real "} {
		c, err := clock.Parse(s)
		if err != nil {
			t.Fatalf("%q: %v", s, err)
		}
		if _, ok := c.(clock.Real); !ok {
			t.Fatalf("%q gave %T, want clock.Real", s, c)
		}
		if d := abs(time.Since(c.Now())); d > time.Minute {
			t.Fatalf("real clock off by %s", d)
		}
	}
}

func TestParse_BadSettingsFail(t *testing.T) {
	t.Parallel()
	for _, s := range []string{
		"tomorrow",
		"2025-01-01T10:00:00Z*fast",
		"2025-01-01T10:00:00Z*-1",
		"2025-01-01T10:00:00Z@notanumber",
		"2025-01-01 10:00",
	} {
		if _, err := clock.Parse(s); err == nil {
			t.Errorf("%q accepted", s)
		}
	}
}

func TestVirtual_SetAndRate(t *testing.T) {
	t.Parallel()
	start := time.Date(2025, 5, 1, 10, 0, 0, 0, clock.Seoul)
	v := clock.NewVirtual(start, 0)
	if !v.Now().Equal(start) {
		t.Fatalf("rate-0 clock moved: %s", v.Now())
	}
	later := start.Add(3 * time.Hour)
	v.Set(later)
	if !v.Now().Equal(later) {
		t.Fatalf("after Set: %s, want %s", v.Now(), later)
	}
}

func TestAtAndDate_UseSeoulCalendar(t *testing.T) {
	t.Parallel()
	// 2025-05-01 23:30 UTC is 2025-05-02 08:30 in Seoul.
	u := time.Date(2025, 5, 1, 23, 30, 0, 0, time.UTC)
	if got, want := clock.Date(u), time.Date(2025, 5, 2, 0, 0, 0, 0, clock.Seoul); !got.Equal(want) {
		t.Fatalf("Date = %s, want %s", got, want)
	}
	if got, want := clock.At(u, 20, 40), time.Date(2025, 5, 2, 20, 40, 0, 0, clock.Seoul); !got.Equal(want) {
		t.Fatalf("At = %s, want %s", got, want)
	}
}

// A File clock follows its file: a jump written by one process is read by
// every clock opened on the file, without a restart.
func TestFileClockFollowsRewrites(t *testing.T) {
	t.Parallel()
	path := t.TempDir() + "/clock"
	start := time.Date(2025, 5, 1, 9, 0, 0, 0, clock.Seoul)
	v := clock.NewVirtual(start, 0) // rate 0: the clock stands still
	if err := clock.WriteSetting(path, v); err != nil {
		t.Fatal(err)
	}
	c, err := clock.Parse(clock.FilePrefix + path)
	if err != nil {
		t.Fatal(err)
	}
	if got := c.Now(); !got.Equal(start) {
		t.Fatalf("Now = %s, want %s", got, start)
	}
	later := start.Add(3 * time.Hour)
	v.Set(later)
	if err := clock.WriteSetting(path, v); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for !c.Now().Equal(later) {
		if time.Now().After(deadline) {
			t.Fatalf("file clock still reads %s after the jump to %s", c.Now(), later)
		}
		time.Sleep(time.Millisecond)
	}
	if _, err := clock.Parse(clock.FilePrefix + path + ".missing"); err == nil {
		t.Fatal("a missing clock file parsed")
	}
}
