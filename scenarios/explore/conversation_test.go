package explore

import (
	"slices"
	"testing"

	"github.com/outboxchaos/outboxchaos/fakevendor"
)

// TestConversations: about one schedule in three scripts one message's
// exchange with the vendor: two or three send answers, then up to three
// lookup answers, each once, all for one message, never a wrong or missing
// report twice in a row. The draw is the last: without it every seed gives
// the schedule it gave before.
func TestConversations(t *testing.T) {
	t.Parallel()
	scripted, lookups := 0, 0
	lengths := map[int]int{}
	for seed := int64(0); seed < 600; seed++ {
		s := Generate(withoutDraw{NewRandDraw(seed), "", []string{"held pair", "stale actor"}})
		before := Generate(withoutDraw{NewRandDraw(seed), "vendor conversation", []string{"held pair", "stale actor"}})
		if err := s.Scenario("conversation").Validate(); err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		extra := s.Faults[len(before.Faults):]
		if len(extra) == 0 {
			if s.String() != before.String() {
				t.Fatalf("seed %d: %s, without the conversation %s", seed, s, before)
			}
			continue
		}
		scripted++
		if !slices.EqualFunc(s.Faults[:len(before.Faults)], before.Faults, func(a, b Timed) bool { return a.String() == b.String() }) {
			t.Fatalf("seed %d: the conversation changed earlier choices", seed)
		}
		sends, misled := 0, false
		for i, f := range extra {
			m := fakevendor.Mode(f.Spec.Mode)
			if f.Spec.Kind != "vendor" || f.Spec.Times != 1 || f.Spec.Msg != extra[0].Spec.Msg {
				t.Fatalf("seed %d: answer %d is %s", seed, i, f)
			}
			if m.ForReports() {
				lookups++
				wrong := m == fakevendor.ReportWrong || m == fakevendor.ReportMissing
				if wrong && misled {
					t.Fatalf("seed %d: a wrong report twice in a row: %s", seed, s)
				}
				misled = wrong
				continue
			}
			if sends < i {
				t.Fatalf("seed %d: a send answer after a lookup's: %s", seed, s)
			}
			sends++
		}
		if sends < 2 || sends > 3 {
			t.Fatalf("seed %d: %d send answers", seed, sends)
		}
		lengths[sends]++
	}
	if scripted < 120 || scripted > 280 || lengths[2] == 0 || lengths[3] == 0 || lookups == 0 {
		t.Errorf("%d of 600 schedules scripted a conversation (lengths %v, %d lookup answers)", scripted, lengths, lookups)
	}
}
