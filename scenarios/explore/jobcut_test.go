package explore

import (
	"slices"
	"testing"

	"github.com/outboxchaos/outboxchaos/faults"
	"github.com/outboxchaos/outboxchaos/scenarios/scenario"
	"github.com/outboxchaos/outboxchaos/system/killpoint"
	"github.com/outboxchaos/outboxchaos/system/notification"
)

// withoutDraw answers label, and every draw in also, with its addedDraws
// value (the choice that adds nothing) and every other draw from d:
// Generate as it drew before label.
type withoutDraw struct {
	d     Draw
	label string
	also  []string
}

func (w withoutDraw) Int(label string, lo, hi int) int {
	if label == w.label || slices.Contains(w.also, label) {
		return addedDraws[label]
	}
	return w.d.Int(label, lo, hi)
}

// afterCut are the draws Generate takes after the job link cut's: the
// cut's test leaves them out on both sides.
var afterCut = []string{"start by a rule", "consent withdrawn in flight", "second grade history", "vendor conversation", "held pair", "stale actor"}

// TestJobCutSchedules: about one schedule in four cuts a job run's
// database link in the middle of its transaction: its enqueue step (the
// first job run, or the feed round it names) arms a pause-point of the job
// role at a hit the run reaches, runs again until a run completes, and
// takes the job's own link or the shared one down while frozen. The draw
// is the last: without it every seed gives the schedule it gave before.
func TestJobCutSchedules(t *testing.T) {
	t.Parallel()
	cut, fed, coupons, shared := 0, 0, 0, 0
	for seed := int64(0); seed < 1000; seed++ {
		s := Generate(withoutDraw{NewRandDraw(seed), "", afterCut})
		before := Generate(withoutDraw{NewRandDraw(seed), "job link cut", afterCut})
		if s.JobCut == nil {
			if s.String() != before.String() {
				t.Fatalf("seed %d: %s, without the cut's draw %s", seed, s, before)
			}
			continue
		}
		cut++
		c := *s.JobCut
		if before.JobCut != nil {
			t.Fatalf("seed %d: cut without its draw", seed)
		}
		before.JobCut = &c
		if s.String() != before.String() {
			t.Fatalf("seed %d: the cut changed earlier choices: %s, want %s", seed, s, before)
		}
		if !slices.Contains(jobLinks, c.Link) {
			t.Fatalf("seed %d: cut link %q", seed, c.Link)
		}
		if c.Link == "postgres" {
			shared++
		}
		others := len(s.Kinds)
		if slices.Contains(s.Kinds, notification.AnniversaryCoupon) {
			others--
		}
		switch c.Point {
		case killpoint.JobBeforeCommit:
			if c.Hit < 1 || c.Hit > others {
				t.Fatalf("seed %d: %s: before-commit hit %d of %d commits", seed, s, c.Hit, others)
			}
		case killpoint.JobAfterCoupon:
			coupons++
			if !slices.Contains(s.Kinds, notification.AnniversaryCoupon) || c.Hit < 1 || c.Hit > s.PerKind+s.feedStep() {
				t.Fatalf("seed %d: %s: after-coupon hit %d", seed, s, c.Hit)
			}
		default:
			t.Fatalf("seed %d: cut at %q", seed, c.Point)
		}
		if c.Round > 0 {
			fed++
			if s.Feed == nil || c.Round > s.Feed.Rounds {
				t.Fatalf("seed %d: %s: cut in round %d", seed, s, c.Round)
			}
		}
		sc := s.Scenario("cut")
		if err := sc.Validate(); err != nil {
			t.Fatalf("seed %d: %s: %v", seed, s, err)
		}
		var cuts []scenario.Step
		var walk func(in []scenario.Step, round int)
		walk = func(in []scenario.Step, round int) {
			for _, st := range in {
				if len(st.WhileFrozen) > 0 {
					if round != c.Round {
						t.Fatalf("seed %d: cut in round %d, want %d", seed, round, c.Round)
					}
					cuts = append(cuts, st)
				}
				r := round
				if st.Do == "later" {
					r = int(st.After.D() / s.Feed.Gap.D())
				}
				walk(st.Steps, r)
			}
		}
		walk(sc.Steps, 0)
		if len(cuts) != 1 {
			t.Fatalf("seed %d: %d cut enqueue steps", seed, len(cuts))
		}
		st := cuts[0]
		if st.Do != "enqueue" || !st.Supervise || len(st.WhileFrozen) != 1 || st.WhileFrozen[0].Kind != "down" || st.WhileFrozen[0].Link != c.Link ||
			!slices.ContainsFunc(st.Faults, func(f faults.Spec) bool { return f.Kind == "pause-point" && f.Point == c.Point && f.Hit == c.Hit }) {
			t.Fatalf("seed %d: cut step %+v", seed, st)
		}
	}
	t.Logf("of 1000 schedules %d cut a job run: %d in a feed round, %d after a coupon, %d on the shared link", cut, fed, coupons, shared)
	if cut < 200 || cut > 300 {
		t.Errorf("%d of 1000 schedules cut a job run: want about one in four", cut)
	}
	if fed < 20 || coupons < 20 || shared < 50 || shared > cut-50 {
		t.Errorf("of %d cuts %d in a feed round, %d after a coupon, %d on the shared link", cut, fed, coupons, shared)
	}
}

// feedStep is the schedule's feed step, 0 without a feed.
func (s Schedule) feedStep() int {
	if s.Feed == nil {
		return 0
	}
	return s.Feed.Step
}
