package sim

import (
	"encoding/json"
	"regexp"
	"strings"
	"testing"
	"time"
)

func TestCapacityTablesAreSortedWithRangesAndTextDurations(t *testing.T) {
	lag := Lag{Cycle: 200 * time.Millisecond, Added: 40 * time.Millisecond, Share: 0.2, Valid: true}
	c := &Capacity{
		Seeds: []int64{1, 2, 3},
		Wall:  90 * time.Second,
		Ad: []AdRow{
			{LatencyMS: 150, BatchSize: 50, Offered: 800, BeforeCutoff: 400, Runs: []int{400}, Lag: lag, LagValid: true, MaxShare: 0.2},
			{LatencyMS: 500, BatchSize: 500, Drain: true, Offered: 7500, BeforeCutoff: 4200, Runs: []int{4100, 4200, 4300}, Lag: lag, LagValid: true, MaxShare: 0.22},
		},
		Errors: []ErrorRow{{Timeout: 0.005, Messages: 6000, Errors: 33, Alerts: 33,
			Runs: []ErrorRun{{Seed: 1, Messages: 2000, Errors: 11, Lag: lag}, {Seed: 2, Messages: 2000, Errors: 8, Lag: lag}, {Seed: 3, Messages: 2000, Errors: 14, Lag: lag}}}},
	}
	var b strings.Builder
	WriteCapacity(&b, c)
	page := b.String()
	for _, want := range []string{"| 4100–4300 |", "| 40–70 |", "| 55 |", "(ms)", "(messages, median)", "seeds 1, 2, 3"} {
		if !strings.Contains(page, want) {
			t.Errorf("capacity page lacks %q:\n%s", want, page)
		}
	}
	lo, hi := c.Errors[0].Interval(33)
	if !(lo < 55 && 55 < hi) || lo < 30 || hi > 90 {
		t.Errorf("95 %% interval of 33 in 6000 per 10,000 = %.0f–%.0f, want around 39–77", lo, hi)
	}
	js, err := json.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	if m := regexp.MustCompile(`"(Cycle|Added|Wall)":\d`).Find(js); m != nil {
		t.Errorf("a duration is bare nanoseconds in the JSON: %s", m)
	}
	if !strings.Contains(string(js), `"Cycle":"200ms"`) || !strings.Contains(string(js), `"Wall":"1m30s"`) {
		t.Errorf("durations not as text: %s", js)
	}
}
