package auditor

import (
	"fmt"
	"slices"
	"strings"
	"time"
	_ "time/tzdata" // Asia/Seoul must resolve on machines without zoneinfo.
)

// Seoul is the time zone of the design's business day and hours.
var Seoul = func() *time.Location {
	loc, err := time.LoadLocation("Asia/Seoul")
	if err != nil {
		panic(fmt.Sprintf("load time zone Asia/Seoul: %v", err))
	}
	return loc
}()

// The notification kinds of the design's key table, spelled here from the
// design rather than taken from the pipeline, so that a pipeline that
// spells a key wrong is caught by it.
const (
	GradeRenewal   = "GRADE_RENEWAL"
	AwardsWinning  = "MONTHLY_AWARDS_WINNING"
	AwardsClosing  = "MONTHLY_AWARDS_CLOSING"
	MissionRemind  = "MISSION_PARTICIPATION_REMINDER"
	GradeLockIn    = "GRADE_LOCK_IN"
	Anniversary    = "ANNIVERSARY_COUPON"
	anniversaryKey = Anniversary + ":"
)

// AllKinds lists every kind, in the order the jobs run them.
var AllKinds = []string{GradeRenewal, AwardsWinning, AwardsClosing, MissionRemind, GradeLockIn, Anniversary}

// Advertising reports whether kind is an advertising kind (subject to the
// advertising hours).
func Advertising(kind string) bool { return kind == MissionRemind || kind == GradeLockIn }

// Notification is one message the design requires of a run: one per
// business event, under the key the design's table gives it.
type Notification struct {
	// Key is the dedup key. An anniversary coupon's key ends in the id of
	// the coupon the job issues, which the harness cannot know: its Key is
	// the prefix "ANNIVERSARY_COUPON:" and Coupon is set.
	Key    string `json:"key"`
	Coupon bool   `json:"coupon,omitempty"`
	Kind   string `json:"kind"`
	Member int64  `json:"member"`
	Phone  string `json:"phone"`
	// Date is the scheduled date (the Seoul day of the job run that owes
	// it), YYYY-MM-DD.
	Date string `json:"date"`
	// Optional: owed only on one of the two days a job run that spanned
	// midnight may have taken (JobRun.End); the run may or may not hold it.
	Optional bool `json:"optional,omitempty"`
}

// Advertising reports whether n is an advertising message.
func (n Notification) Advertising() bool { return Advertising(n.Kind) }

// id tells notifications apart: the key, and for an anniversary coupon
// (whose key the harness cannot know) the member.
func (n Notification) id() string {
	if n.Coupon {
		return fmt.Sprintf("%s%d", n.Key, n.Member)
	}
	return n.Key
}

// Matches reports whether dedup key k is n's: equal, or for an
// anniversary coupon the prefix followed by a coupon id.
func (n Notification) Matches(k string) bool {
	if !n.Coupon {
		return k == n.Key
	}
	id, ok := strings.CutPrefix(k, anniversaryKey)
	return ok && id != "" && strings.Trim(id, "0123456789") == ""
}

// Expect returns the notifications the run owes, in the order its jobs
// owe them: for every job run, the notifications of its kinds that the
// business rows call for on the job's Seoul day, once per key (a job run
// again owes nothing new; an anniversary target is owed one coupon
// message whichever run issues it). A run that spanned midnight in Seoul
// owes for certain what both days call for, and optionally what only one
// does; a run that failed owes everything optionally.
func Expect(r Record) []Notification {
	members := map[int64]Member{}
	for _, m := range r.Business.Members {
		members[m.ID] = m
	}
	var out []Notification
	at := map[string]int{}
	add := func(n Notification) {
		id := n.id()
		if i, ok := at[id]; ok {
			// Owed for certain by a later run: no longer optional.
			out[i].Optional = out[i].Optional && n.Optional
			return
		}
		at[id] = len(out)
		out = append(out, n)
	}
	for _, j := range r.Jobs {
		kinds := j.Kinds
		if len(kinds) == 0 {
			kinds = AllKinds
		}
		days := []time.Time{j.Time.In(Seoul)}
		if !j.End.IsZero() && j.End.In(Seoul).Format(time.DateOnly) != days[0].Format(time.DateOnly) {
			days = append(days, j.End.In(Seoul))
		}
		for _, k := range AllKinds {
			if !slices.Contains(kinds, k) {
				continue
			}
			for _, n := range owedOn(r, members, k, days, j.At) {
				n.Optional = n.Optional || j.Failed
				add(n)
			}
		}
	}
	return out
}

// owedOn lists the notifications of kind k a job run owes when it may
// have taken any of days: those owed on every one of them for certain,
// the others as optional.
func owedOn(r Record, members map[int64]Member, k string, days []time.Time, started time.Duration) []Notification {
	count := map[string]int{}
	var all []Notification
	for _, day := range days {
		date, month := day.Format(time.DateOnly), day.Format("2006-01")
		for _, n := range owed(r.Business, k, date, month, started) {
			m, ok := members[n.Member]
			if !ok {
				continue // the job joins members: no member, no message
			}
			n.Kind, n.Phone, n.Date = k, m.Phone, date
			if count[n.id()]++; count[n.id()] == 1 {
				all = append(all, n)
			}
		}
	}
	for i := range all {
		all[i].Optional = count[all[i].id()] < len(days)
	}
	return all
}

// owed lists the notifications of kind k that the business rows committed
// before a job run started call for on the Seoul day date (month: its
// YYYY-MM), by the design's key table.
func owed(b Business, k, date, month string, started time.Duration) []Notification {
	var out []Notification
	before := func(s Seeding) bool { return s.Seeded == 0 || s.Seeded <= started }
	switch k {
	case GradeRenewal:
		for _, g := range b.GradeHistories {
			if !before(g.Seeding) {
				continue
			}
			out = append(out, Notification{Key: fmt.Sprintf("GRADE_RENEWAL:%d", g.ID), Member: g.MemberID})
		}
	case AwardsWinning:
		for _, w := range b.AwardWinnings {
			if !before(w.Seeding) {
				continue
			}
			out = append(out, Notification{Key: fmt.Sprintf("MONTHLY_AWARDS_WINNING:%d", w.ID), Member: w.MemberID})
		}
	case AwardsClosing:
		for _, w := range b.AwardWinnings {
			if !before(w.Seeding) {
				continue
			}
			out = append(out, Notification{Key: fmt.Sprintf("MONTHLY_AWARDS_CLOSING:%d:%s", w.ID, w.Deadline), Member: w.MemberID})
		}
	case MissionRemind:
		for _, t := range b.MissionTargets {
			if t.Day == date && before(t.Seeding) {
				out = append(out, Notification{Key: fmt.Sprintf("MISSION_PARTICIPATION_REMINDER:%s:%d", t.Day, t.MemberID), Member: t.MemberID})
			}
		}
	case GradeLockIn:
		for _, t := range b.LockInTargets {
			if t.Month == month && before(t.Seeding) {
				out = append(out, Notification{Key: fmt.Sprintf("GRADE_LOCK_IN:%s:%d", t.Month, t.MemberID), Member: t.MemberID})
			}
		}
	case Anniversary:
		for _, t := range b.Anniversaries {
			if !before(t.Seeding) {
				continue
			}
			out = append(out, Notification{Key: anniversaryKey, Coupon: true, Member: t.MemberID})
		}
	}
	return out
}

// Withdrawn returns when member withdrew consent (its first withdrawal,
// by offset), and whether they did.
func (r Record) Withdrawn(member int64) (Withdrawal, bool) {
	for _, w := range r.Withdrawals {
		if w.Member == member {
			return w, true
		}
	}
	return Withdrawal{}, false
}

// minuteOfDay is t's time of day in Seoul, in minutes.
func minuteOfDay(t time.Time) int {
	t = t.In(Seoul)
	return t.Hour()*60 + t.Minute()
}

// MaySend reports whether an advertising message may reach a phone at t.
func (h Hours) MaySend(t time.Time) bool {
	m := minuteOfDay(t)
	return m >= h.SendFrom && m < h.SendUntil
}

// MayPublish reports whether an advertising message may be published at
// t.
func (h Hours) MayPublish(t time.Time) bool {
	m := minuteOfDay(t)
	return m >= h.Resume && m < h.PublishCutoff
}

// Clock formats minutes after midnight as hh:mm.
func Clock(minutes int) string { return fmt.Sprintf("%02d:%02d", minutes/60, minutes%60) }
