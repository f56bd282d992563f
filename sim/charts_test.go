package sim

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// syntheticDay is a day's result shaped like the weekday's: jobs in the
// morning and evening, two worker kills, a deploy, two outages and a relay
// kill, and ERROR rows and alerts spread over the day.
func syntheticDay() *Result {
	d := Default()
	day, _ := d.date()
	r := &Result{Day: d}
	pending, sent, errs := 0, 0, 0
	for m := 8 * 60; m <= 21*60; m++ {
		at := day.Add(time.Duration(m) * time.Minute)
		switch m {
		case 9 * 60:
			pending += 3000
		case 18 * 60:
			pending += 1000
		}
		moved := min(pending, 12)
		pending, sent = pending-moved, sent+moved
		if m%37 == 0 {
			errs++
		}
		r.Samples = append(r.Samples, Sample{At: at, Outbox: map[string]int{"PENDING": pending, "PUBLISHED": sent},
			Inbox: map[string]int{"SENT": sent, "ERROR": errs}, Main: moved * 3, Alerts: errs})
		for i := 0; i < moved; i++ {
			r.Calls = append(r.Calls, at.Add(time.Duration(i)*time.Second))
			r.Latencies = append(r.Latencies, Delivery{Enqueued: at.Add(-time.Duration(m%90) * time.Minute), Handset: at})
		}
	}
	r.Final = r.Samples[len(r.Samples)-1]
	r.Final.At = day.Add(32 * time.Hour)
	for _, e := range []struct{ at, what string }{{"09:00", "job"}, {"11:18", "worker-kill"}, {"11:38", "worker-kill"}, {"14:00", "deploy"},
		{"16:53", "broker-blip"}, {"17:28", "db-blip"}, {"17:37", "relay-kill"}, {"18:05", "relay-kill"}} {
		r.Events = append(r.Events, Fired{Planned: Planned{At: d.at(e.at), What: e.what}, Actual: d.at(e.at)})
	}
	return r
}

// TestChartsMarkEveryFault: every chart is drawn, and every chart's
// caption names the day's seven planned faults (the lines on its time
// axis). OUTBOXCHAOS_CHART_DIR keeps the PNGs to look at.
func TestChartsMarkEveryFault(t *testing.T) {
	dir := os.Getenv("OUTBOXCHAOS_CHART_DIR")
	if dir == "" {
		dir = t.TempDir()
	}
	r := syntheticDay()
	charts, err := WriteCharts(r, dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(charts) != 7 {
		t.Errorf("%d charts, want 7", len(charts))
	}
	for _, c := range charts {
		if fi, err := os.Stat(filepath.Join(dir, c.File)); err != nil || fi.Size() == 0 {
			t.Errorf("chart %s not drawn: %v", c.File, err)
		}
		if !strings.Contains(c.Caption, "1 11:18 worker killed") || !strings.Contains(c.Caption, "7 18:05 relay kill") {
			t.Errorf("chart %s does not name the planned faults: %s", c.File, c.Caption)
		}
	}
}

func TestCountTicksAreWholeNumbers(t *testing.T) {
	for _, r := range [][2]float64{{0, 1}, {0, 3}, {0, 5000}, {0, 37}} {
		ticks := countTicks{}.Ticks(r[0], r[1])
		labelled := 0
		for _, tk := range ticks {
			if tk.Label != "" {
				labelled++
				if strings.ContainsAny(tk.Label, ".e") {
					t.Errorf("range %v: tick label %q is not a whole number", r, tk.Label)
				}
			}
		}
		if labelled < 2 {
			t.Errorf("range %v: %d labelled ticks", r, labelled)
		}
	}
}
