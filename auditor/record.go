// Package auditor derives what one run of the pipeline should have done
// from what the harness itself did, never from a table the pipeline
// writes: the business rows the harness seeded before any job ran, the
// jobs it started, the consent withdrawals it made, each at its time on
// the run's clock, and the design's tables (the dedup keys of each kind,
// the advertising hours). Its answer is the expected state the checker's
// auditor invariants judge a run's final tables and handset ledger
// against, as TigerBeetle's auditor builds expected balances from the
// requests it sent.
//
// It is pure by construction: it imports nothing that talks to a
// database, a broker or the network, so a recorded run recomputes.
package auditor

import "time"

// Record is the harness's own account of one run: what it seeded and did,
// each with its time. It is JSON-serialisable and travels in a recorded
// run (checker.State.Harness).
type Record struct {
	// Production: the run's pipeline believed it was in production (every
	// number may receive); otherwise only Business.Registered numbers may.
	Production bool `json:"production,omitempty"`
	// Hours are the advertising rules the run's pipeline was configured
	// with.
	Hours Hours `json:"hours"`
	// Business holds every business row the harness wrote.
	Business Business `json:"business"`
	// Jobs are the batch job runs the harness started, in order.
	Jobs []JobRun `json:"jobs,omitempty"`
	// Withdrawals are the consent withdrawals the harness made, in order.
	Withdrawals []Withdrawal `json:"withdrawals,omitempty"`
	// Skewed are the pods whose own clock the harness moved away from the
	// run's: a time-of-day rule they applied is not judged on the run's
	// clock.
	Skewed []string `json:"skewed,omitempty"`
}

// Hours are the design's advertising hours, as times of day in Seoul,
// in minutes after midnight.
type Hours struct {
	PublishCutoff int `json:"publish_cutoff"` // no ad is published at or after it...
	Resume        int `json:"resume"`         // ... nor before it
	SendFrom      int `json:"send_from"`      // an ad may reach a phone from here...
	SendUntil     int `json:"send_until"`     // ... until just before here
}

// Business is the business rows the harness seeded. The table each field
// names is the one the batch jobs read.
type Business struct {
	Members        []Member       `json:"members,omitempty"`
	Registered     []string       `json:"registered,omitempty"` // registered_numbers
	GradeHistories []GradeHistory `json:"grade_histories,omitempty"`
	AwardWinnings  []AwardWinning `json:"award_winnings,omitempty"`
	MissionTargets []DayTarget    `json:"mission_targets,omitempty"`
	LockInTargets  []MonthTarget  `json:"lock_in_targets,omitempty"`
	Anniversaries  []YearTarget   `json:"anniversary_targets,omitempty"`
}

// Member is a members row as seeded.
type Member struct {
	ID      int64  `json:"id"`
	Name    string `json:"name"`
	Phone   string `json:"phone"`
	Consent bool   `json:"sms_consent"`
	Active  bool   `json:"active"`
}

// Seeding is when the harness committed a business row (an offset from
// the run's start; zero: not recorded): a job run that started before it
// owes nothing for the row.
type Seeding struct {
	Seeded time.Duration `json:"seeded,omitempty"`
}

// GradeHistory is a grade_histories row.
type GradeHistory struct {
	ID       int64  `json:"id"`
	MemberID int64  `json:"member_id"`
	Grade    string `json:"grade"`
	Month    string `json:"month"` // YYYY-MM
	Seeding
}

// AwardWinning is an award_winnings row.
type AwardWinning struct {
	ID       int64  `json:"id"`
	MemberID int64  `json:"member_id"`
	Award    string `json:"award"`
	Deadline string `json:"deadline"` // YYYY-MM-DD
	Seeding
}

// DayTarget is a mission_targets row.
type DayTarget struct {
	Day      string `json:"day"` // YYYY-MM-DD
	MemberID int64  `json:"member_id"`
	Seeding
}

// MonthTarget is a lock_in_targets row.
type MonthTarget struct {
	Month    string `json:"month"` // YYYY-MM
	MemberID int64  `json:"member_id"`
	Seeding
}

// YearTarget is an anniversary_targets row.
type YearTarget struct {
	MemberID int64 `json:"member_id"`
	Year     int   `json:"year"`
	Seeding
}

// JobRun is one batch job the harness started: the kinds it was asked to
// enqueue (none: every kind) and when, on the run's clock.
type JobRun struct {
	At    time.Duration `json:"at"`
	Time  time.Time     `json:"time"`
	Kinds []string      `json:"kinds,omitempty"`
	// End is the job's clock when the harness saw it exit (zero: not
	// recorded). The job reads its day somewhere between Time and End: a
	// run that spans midnight in Seoul may have taken either day.
	End time.Time `json:"end,omitzero"`
	// Failed: the job exited non-zero (killed, or its database failed).
	// What it owes is optional: it may have committed some of it before it
	// failed, and a run that completes owes the rest for certain. Its
	// failure is the scheduler's to see, not a loss the pipeline hides.
	Failed bool `json:"failed,omitempty"`
}

// Withdrawal is a member withdrawing SMS consent: from Time on (offset
// At), nothing may reach that member's phone.
type Withdrawal struct {
	At     time.Duration `json:"at"`
	Time   time.Time     `json:"time"`
	Member int64         `json:"member"`
}

// IsSkewed reports whether the harness moved pod's own clock.
func (r Record) IsSkewed(pod string) bool {
	for _, p := range r.Skewed {
		if p == pod {
			return true
		}
	}
	return false
}
