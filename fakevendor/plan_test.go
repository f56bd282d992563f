package fakevendor_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/outboxchaos/outboxchaos/fakevendor"
)

// Plan chooses by refkey and attempt, a rule still wins over it, and
// LatencyFor is asked by refkey.
func TestPlanChoosesByRefkeyAndAttempt(t *testing.T) {
	t.Parallel()
	asked := map[string]int{}
	fv, base := started(t, fakevendor.Options{HangTimeout: time.Second,
		Plan: func(refkey string, attempt int) fakevendor.Mode {
			if refkey == "p" && attempt == 1 {
				return fakevendor.Status429
			}
			return ""
		},
		LatencyFor: func(refkey string) time.Duration { asked[refkey]++; return time.Millisecond },
	})
	if err := fv.AddRule(fakevendor.Rule{RefKey: "r", Mode: fakevendor.Fail5xx, Times: 1}); err != nil {
		t.Fatal(err)
	}
	tok := mustToken(t, base)
	for _, c := range []struct {
		refkey string
		want   int
	}{{"p", http.StatusTooManyRequests}, {"p", http.StatusOK}, {"r", http.StatusServiceUnavailable}, {"r", http.StatusOK}, {"q", http.StatusOK}} {
		if got := mustStatus(t, base, tok, c.refkey); got != c.want {
			t.Fatalf("send %s: HTTP %d, want %d", c.refkey, got, c.want)
		}
	}
	if fv.Count("p") != 1 || fv.Count("r") != 1 || fv.Count("q") != 1 {
		t.Fatalf("ledger counts p=%d r=%d q=%d, want 1 each", fv.Count("p"), fv.Count("r"), fv.Count("q"))
	}
	if asked["p"] != 1 || asked["q"] != 1 {
		t.Fatalf("latency asked %v, want once per accepted send", asked)
	}
}
