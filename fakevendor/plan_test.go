package fakevendor_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/outboxchaos/outboxchaos/fakevendor"
)

// The weather answers by refkey and attempt, a rule still wins over it,
// its answers are counted, it ends when cleared, and LatencyFor is asked
// by refkey.
func TestWeatherChoosesByRefkeyAndAttempt(t *testing.T) {
	t.Parallel()
	asked := map[string]int{}
	fv, base := started(t, fakevendor.Options{HangTimeout: time.Second,
		LatencyFor: func(refkey string) time.Duration { asked[refkey]++; return time.Millisecond },
	})
	w := fakevendor.Weather{Throttle: 0.5, Seed: 7}
	// A refkey the weather throttles on its first send and lets through on
	// its second, and one it lets through at once.
	var p, q string
	for i := 0; p == "" || q == ""; i++ {
		ref := "m" + string(rune('a'+i%26)) + string(rune('a'+i/26))
		switch {
		case p == "" && w.Mode(ref, 1) == fakevendor.Status429 && w.Mode(ref, 2) == "":
			p = ref
		case q == "" && w.Mode(ref, 1) == "":
			q = ref
		}
	}
	fv.SetWeather(&w)
	if err := fv.AddRule(fakevendor.Rule{RefKey: q, Mode: fakevendor.Fail5xx, Times: 1}); err != nil {
		t.Fatal(err)
	}
	tok := mustToken(t, base)
	for _, c := range []struct {
		refkey string
		want   int
	}{{p, http.StatusTooManyRequests}, {p, http.StatusOK}, {q, http.StatusServiceUnavailable}} {
		if got := mustStatus(t, base, tok, c.refkey); got != c.want {
			t.Fatalf("send %s: HTTP %d, want %d", c.refkey, got, c.want)
		}
	}
	if got := fv.WeatherAnswers(); got[fakevendor.Status429] != 1 || len(got) != 1 {
		t.Fatalf("weather answers %v, want one 429", got)
	}
	fv.SetWeather(&fakevendor.Weather{Throttle: 1})
	fv.SetWeather(nil)
	if got := mustStatus(t, base, tok, q); got != http.StatusOK {
		t.Fatalf("send %s after the weather ended: HTTP %d, want 200", q, got)
	}
	if fv.Count(p) != 1 || fv.Count(q) != 1 {
		t.Fatalf("ledger counts %s=%d %s=%d, want 1 each", p, fv.Count(p), q, fv.Count(q))
	}
	if asked[p] != 1 || asked[q] != 1 {
		t.Fatalf("latency asked %v, want once per accepted send", asked)
	}
}

// Shares outside [0, 1], or adding up to more than 1, are refused.
func TestWeatherValidate(t *testing.T) {
	t.Parallel()
	for _, w := range []fakevendor.Weather{{Timeout: -0.1}, {Fail5xx: 1.5}, {Timeout: 0.6, Throttle: 0.6}} {
		if w.Validate() == nil {
			t.Errorf("%+v: accepted", w)
		}
	}
	if err := (fakevendor.Weather{Timeout: 0.5, Fail5xx: 0.25, Throttle: 0.25}).Validate(); err != nil {
		t.Errorf("shares adding to 1 refused: %v", err)
	}
}
