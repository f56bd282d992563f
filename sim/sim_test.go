package sim

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/outboxchaos/outboxchaos/fakevendor"
	"github.com/outboxchaos/outboxchaos/system/config"
)

func TestShippedDaysLoadAndValidate(t *testing.T) {
	if err := Default().Validate(); err != nil {
		t.Fatalf("default day: %v", err)
	}
	files, _ := filepath.Glob("days/*")
	if len(files) < 3 {
		t.Fatalf("want at least three example days in days/, got %v", files)
	}
	for _, f := range files {
		if _, err := Load(f); err != nil {
			t.Errorf("%s: %v", f, err)
		}
	}
}

func TestLoadRejectsBadDays(t *testing.T) {
	dir := t.TempDir()
	for name, body := range map[string]string{
		"unknown-field.json": `{"membrs": 10}`,
		"unknown-kind.json":  `{"jobs": [{"kind": "BIRTHDAY", "at": "09:00"}]}`,
		"bad-time.yaml":      "jobs:\n  - kind: GRADE_RENEWAL\n    at: \"9 o'clock\"\n",
		"bad-rate.json":      `{"rate": 0.5}`,
		"shares.json":        `{"vendor": {"latency_median_ms": 1, "latency_p99_ms": 2, "timeout": 0.6, "5xx": 0.6}}`,
	} {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := Load(p); err == nil {
			t.Errorf("%s loaded: %s", name, body)
		}
	}
	if _, err := Load(filepath.Join(dir, "missing.json")); err == nil || !strings.Contains(err.Error(), "read day") {
		t.Errorf("missing file: %v", err)
	}
}

// A list in a day file replaces the default's, it is not merged into it.
func TestLoadReplacesLists(t *testing.T) {
	p := filepath.Join(t.TempDir(), "one.json")
	if err := os.WriteFile(p, []byte(`{"members": 10, "jobs": [{"kind": "GRADE_RENEWAL", "at": "09:00"}], "deploys": []}`), 0o644); err != nil {
		t.Fatal(err)
	}
	d, err := Load(p)
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Jobs) != 1 || d.Jobs[0].Members != 0 || len(d.Deploys) != 0 || d.Name != "one" {
		t.Fatalf("loaded %+v", d)
	}
}

func TestPlanIsFixedBySeed(t *testing.T) {
	d := Default()
	d.Vendor.Timeout, d.Vendor.Fail5xx, d.Vendor.Throttle = 0.1, 0.1, 0.1
	a, b, c := NewPlan(d, 7), NewPlan(d, 7), NewPlan(d, 8)
	aw, bw, cw := a.Weather(), b.Weather(), c.Weather()
	modes := map[fakevendor.Mode]int{}
	differ := 0
	for i := 0; i < 2000; i++ {
		ref := "notification-outbox-" + strings.Repeat("x", i%7) + string(rune('a'+i%26))
		if aw.Mode(ref, 1) != bw.Mode(ref, 1) || a.Latency(ref) != b.Latency(ref) {
			t.Fatalf("seed 7 twice disagrees on %s", ref)
		}
		if aw.Mode(ref, 1) != cw.Mode(ref, 1) {
			differ++
		}
		modes[aw.Mode(ref, i%3+1)]++
	}
	if differ == 0 {
		t.Fatal("seeds 7 and 8 drew the same vendor plan")
	}
	for _, m := range []fakevendor.Mode{"", fakevendor.AcceptHang, fakevendor.Hang, fakevendor.Accept5xx, fakevendor.Fail5xx, fakevendor.Status429} {
		if modes[m] == 0 {
			t.Errorf("mode %q never drawn: %v", m, modes)
		}
	}
	if len(a.Events) != len(b.Events) {
		t.Fatal("event plans differ")
	}
	for i := range a.Events {
		if !a.Events[i].At.Equal(b.Events[i].At) || a.Events[i].What != b.Events[i].What {
			t.Fatalf("event %d differs: %+v vs %+v", i, a.Events[i], b.Events[i])
		}
	}
}

func TestLatencyFollowsTheDistribution(t *testing.T) {
	d := Default()
	d.Vendor.LatencyMedianMS, d.Vendor.LatencyP99MS = 100, 1000
	p := NewPlan(d, 1)
	below, over99 := 0, 0
	const n = 20000
	for i := 0; i < n; i++ {
		l := p.Latency("r" + time.Duration(i).String())
		if l < 100*time.Millisecond {
			below++
		}
		if l > time.Second {
			over99++
		}
	}
	if below < n*45/100 || below > n*55/100 || over99 > n*2/100 || over99 == 0 {
		t.Fatalf("%d of %d below the median, %d over the p99", below, n, over99)
	}
}

// Durations compared with the clock keep production values; real timers
// are divided by the rate, never below their floor.
func TestConfigureScalesOnlyRealTimers(t *testing.T) {
	c := config.Default()
	configure(&c, Default(), 20)
	p := config.Default()
	if c.Lease != p.Lease || c.SendingTimeout != p.SendingTimeout || c.Backoff[0] != p.Backoff[0] || c.VendorAcceptWindow != p.VendorAcceptWindow {
		t.Fatalf("a clock-compared duration was scaled: %+v", c)
	}
	if c.RetryTTL != p.RetryTTL/20 || c.VendorTimeout != p.VendorTimeout/20 || c.ConfirmTimeout != floors["confirm-timeout"] {
		t.Fatalf("real timers: retry %s vendor %s confirm %s", c.RetryTTL, c.VendorTimeout, c.ConfirmTimeout)
	}
	// Exactly the pipeline's own real timers are scaled: not the services'
	// connection timeouts, not the intervals of the pods the cron runs.
	var scaled []string
	ps := p.DurationSettings()
	for i, s := range c.DurationSettings() {
		if *s.Value != *ps[i].Value {
			scaled = append(scaled, s.Name)
		}
	}
	if want := []string{"confirm-timeout", "in-listener-delay", "retry-ttl", "vendor-timeout"}; !slices.Equal(scaled, want) {
		t.Fatalf("scaled %v, want %v", scaled, want)
	}
}

// The lag measure finds the overhead between back-to-back sends and calls
// a day invalid when compression adds too much.
func TestMeasureLag(t *testing.T) {
	d := Default()
	d.Vendor.LatencyMedianMS, d.Vendor.LatencyP99MS = 100, 100
	p := NewPlan(d, 1)
	start := time.Date(2026, 3, 10, 9, 0, 0, 0, time.UTC)
	var calls []fakevendor.Call
	at := start
	for i := 1; i <= 50; i++ {
		calls = append(calls, fakevendor.Call{N: i, RefKey: "r", Mode: fakevendor.Accept, Accepted: true, At: at})
		at = at.Add(100*time.Millisecond + 60*time.Millisecond) // 60 ms outside the call
	}
	calls = append(calls, fakevendor.Call{N: 51, RefKey: "r", Mode: fakevendor.Accept, Accepted: true, At: at.Add(time.Hour)})
	l := measureLag(calls, p, 10, nil, 0)
	if l.Pairs != 49 || l.Overhead != 60*time.Millisecond || l.RealOverhead != 6*time.Millisecond || l.Added != 54*time.Millisecond {
		t.Fatalf("lag %+v", l)
	}
	if l.Valid || l.SuggestedRate >= 10 {
		t.Fatalf("54 ms of a 160 ms cycle is a distortion: %+v", l)
	}
	if l2 := measureLag(calls, p, 2, nil, 0); !l2.Valid {
		t.Fatalf("at rate 2: %+v", l2)
	}
	if l3 := measureLag(calls, p, 2, nil, 2*time.Minute); l3.Valid {
		t.Fatalf("a cron run 2 minutes late: %+v", l3)
	}
}

// TestPlannedFaultsAreSpecs: every fault a shipped day plans is a
// catalogue spec that builds (a worker kill once the driver names the
// active worker), so it goes in through the fault engine and its ledger.
func TestPlannedFaultsAreSpecs(t *testing.T) {
	files, _ := filepath.Glob("days/*")
	for _, f := range files {
		d, err := Load(f)
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		kinds := map[string]bool{}
		for _, ev := range NewPlan(d, 1).Events {
			if ev.What == "job" {
				continue
			}
			if len(ev.Faults) == 0 {
				t.Errorf("%s: %s at %s plans no fault", f, ev.What, ev.At.Format("15:04"))
			}
			for _, s := range ev.Faults {
				if s.Kind == "kill" {
					s.Pod = "worker-1"
				}
				if _, err := s.Build(); err != nil {
					t.Errorf("%s: %s: %v", f, ev.What, err)
				}
				kinds[s.Kind] = true
			}
		}
		t.Logf("%s plans %v", f, kinds)
	}
}

// A day the caller cancelled (a signal) was interrupted, naming the cause;
// only the run's own deadline is a timeout.
func TestStoppedTellsInterruptFromTimeout(t *testing.T) {
	t.Parallel()
	if stopped(t.Context()) != nil {
		t.Fatal("a running context is stopped")
	}
	parent, cancel := context.WithCancelCause(t.Context())
	ctx, stop := context.WithTimeout(parent, time.Hour)
	defer stop()
	cancel(errors.New("signal SIGINT"))
	if err := stopped(ctx); !errors.Is(err, ErrInterrupted) || errors.Is(err, ErrTimeout) || !strings.Contains(err.Error(), "SIGINT") {
		t.Errorf("cancelled: %v", err)
	}
	ctx, stop = context.WithTimeout(t.Context(), 0)
	defer stop()
	<-ctx.Done()
	if err := stopped(ctx); !errors.Is(err, ErrTimeout) {
		t.Errorf("past its deadline: %v", err)
	}
}
