package explore

import (
	"slices"
	"time"

	"github.com/outboxchaos/outboxchaos/faults"
	"github.com/outboxchaos/outboxchaos/scenarios/scenario"
	"github.com/outboxchaos/outboxchaos/system/notification"
)

// ruleTimes are the times of day (and of the month) a rule of the design
// turns at, as a schedule's start: the relay's ad cut-off, the worker's
// send cut-off, the ads' resumption, midnight in Seoul, midnight in UTC
// (09:00 Seoul), and midnight at a month's end in Seoul. A dated one
// keeps its date.
var ruleTimes = []struct {
	at    string
	dated bool
}{
	{"20:40:00", false}, {"20:50:00", false}, {"08:00:00", false}, {"00:00:00", false}, {"09:00:00", false},
	{"2027-02-01 00:00:00", true}, {"2027-01-01 09:00:00", true},
}

// auditDraws are the windows the auditor's invariants judge, drawn after
// every older choice so saved failfiles keep their schedules: a start
// within five seconds either side of a rule's turn, and a consent
// withdrawn while that member's messages are in flight (once a worker
// consumes: past the relay's re-check, before or after the worker's).
func (s *Schedule) auditDraws(d Draw) {
	if d.Int("start by a rule", 0, 2) == 0 {
		r := ruleTimes[d.Int("rule", 0, len(ruleTimes)-1)]
		off := time.Duration(d.Int("seconds from the rule", -5, 5)) * time.Second
		layout := time.TimeOnly
		if r.dated {
			layout = time.DateTime
		}
		base := "2026-12-05 " + r.at
		if r.dated {
			base = r.at
		}
		if t, err := time.Parse(time.DateTime, base); err == nil {
			s.Start = t.Add(off).Format(layout)
		}
	}
	if d.Int("consent withdrawn in flight", 0, 3) == 0 && s.PerKind > 1 {
		m := int64(d.Int("member in flight", 1, s.PerKind))
		s.Faults = append(s.Faults, Timed{Spec: faults.Spec{Kind: faults.KindWithdrawConsent, Member: m}, When: WhenConsuming})
	}
	s.businessDraws(d)
}

// businessDraws shapes the business rows as production has them, drawn
// after every other choice: a member whose grade changed twice in the
// month has two grade histories, so two renewals of one kind go to one
// phone under two keys (beside that member's lock-in, when the schedule
// enqueues both).
func (s *Schedule) businessDraws(d Draw) {
	if !slices.Contains(s.Kinds, notification.GradeRenewal) && len(s.Kinds) > 0 {
		return
	}
	if d.Int("second grade history", 0, 2) != 0 {
		return
	}
	var sh scenario.BusinessShape
	for range d.Int("members with two", 1, 2) {
		m := int64(d.Int("member with two", 1, max(1, s.PerKind)))
		if !slices.Contains(sh.SecondGrade, m) {
			sh.SecondGrade = append(sh.SecondGrade, m)
		}
	}
	slices.Sort(sh.SecondGrade)
	s.Business = &sh
}
