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

// Two processes given the same Setting read the same time.
func TestParse_SettingRoundTripAgreesAcrossParses(t *testing.T) {
	t.Parallel()
	start := clock.At(time.Now(), 10, 0)
	v := clock.NewVirtual(start, 60)
	s := v.Setting()
	a, err := clock.Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	b, err := clock.Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	na, nb, nv := a.Now(), b.Now(), v.Now()
	// At rate 60 a millisecond of real time between the reads is 60 ms of
	// virtual time; allow a generous but still meaningful margin.
	if d := abs(na.Sub(nb)); d > time.Second {
		t.Fatalf("two parses of %q disagree by %s", s, d)
	}
	if d := abs(na.Sub(nv)); d > time.Second {
		t.Fatalf("parsed clock and original disagree by %s", d)
	}
	// Both are anchored in the past, not at parse time: they read at least
	// start, and a clock parsed later is not restarted from start.
	if na.Before(start) || na.Location() != clock.Seoul {
		t.Fatalf("parsed clock reads %s, before start %s or not in Seoul", na, start)
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
