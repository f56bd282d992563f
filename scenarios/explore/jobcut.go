package explore

import (
	"fmt"
	"slices"

	"github.com/outboxchaos/outboxchaos/faults"
	"github.com/outboxchaos/outboxchaos/scenarios/scenario"
	"github.com/outboxchaos/outboxchaos/system/killpoint"
	"github.com/outboxchaos/outboxchaos/system/notification"
)

// JobCut is a database link cut in the middle of one batch job run (issue
// 22: the windows nobody named; every error branch of system/jobs was
// open): the run freezes at the Hit-th hit of Point, inside its
// transaction (before its commit, or after an anniversary coupon's
// insert), Link goes down, the run is continued and meets the cut link
// at its next statement, and the link comes back once the run exited.
// The failed run runs again, without its faults, as its schedule would
// (supervise): what it rolled back is enqueued by the run again, so
// nothing is judged lost that a deployment would re-create. Tied to the
// job's own statements, not to a time.
type JobCut struct {
	Point string `json:"point"`
	Hit   int    `json:"hit"`
	Link  string `json:"link"`
	// Round is the run cut: 0 the schedule's first job run, before the
	// pods start; k its feed round k, while the pipeline runs.
	Round int `json:"round,omitempty"`
}

func (c JobCut) String() string {
	s := fmt.Sprintf("job-cut=%s down at %s:%d", c.Link, c.Point, c.Hit)
	if c.Round > 0 {
		s += fmt.Sprintf(" in feed round %d", c.Round)
	}
	return s
}

// jobLinks are the links a job cut may take down: the job's own hop, or
// the shared Postgres link (every pod's database with it).
var jobLinks = []string{"postgres-job", "postgres"}

// jobCut draws a cut job run for about one schedule in four.
func (s *Schedule) jobCut(d Draw) {
	if d.Int("job link cut", 0, 3) != 0 {
		return
	}
	c := JobCut{Link: jobLinks[d.Int("job link", 0, len(jobLinks)-1)]}
	if s.Feed != nil {
		c.Round = d.Int("job cut round", 0, s.Feed.Rounds)
	}
	anniversary := slices.Contains(s.Kinds, notification.AnniversaryCoupon)
	others := len(s.Kinds)
	if anniversary {
		others--
	}
	// The coupons a run issues: the first run one per member, a feed
	// round at least its step's new members.
	coupons := s.PerKind
	if c.Round > 0 {
		coupons = s.Feed.Step
	}
	if d.Int("job cut point", 0, 1) == 1 && anniversary || others == 0 {
		c.Point, c.Hit = killpoint.JobAfterCoupon, d.Int("job cut hit", 1, coupons)
	} else {
		// One commit per kind but the anniversary (one per coupon).
		c.Point, c.Hit = killpoint.JobBeforeCommit, d.Int("job cut hit", 1, others)
	}
	s.JobCut = &c
}

// cutEnqueue is an enqueue step that runs again until a run completes,
// with the cut armed in its first run when c is set.
func cutEnqueue(st scenario.Step, c *JobCut) scenario.Step {
	st.Supervise = true
	if c != nil {
		st.Faults = append(st.Faults, faults.Spec{Kind: faults.KindPausePoint, Point: c.Point, Hit: c.Hit})
		st.WhileFrozen = []faults.Spec{{Kind: faults.KindDown, Link: c.Link}}
		st.Note = "job cut: " + c.String()
	}
	return st
}
