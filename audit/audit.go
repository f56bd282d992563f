// Package audit applies the harness's checker to data a production
// pipeline already has: its outbox and inbox tables (read in one
// REPEATABLE READ, READ ONLY transaction), the SMS vendor's delivery
// report, and optionally a log of the alerts it sent. The report's
// delivery lines play the handset ledger: a message the vendor reports
// delivered twice was delivered twice, whatever the tables say.
//
// It does not copy the checker's rules: Build turns the data into a
// checker.State and Judge runs the checker's own invariants on it, each
// one whose inputs the data hold; the others say why they are not judged
// (the pods' history, the harness's business rows). A live database has
// no end of run, so Build sets aside the messages still in flight within
// their deadlines (a lease, the sending timeout, a grace for a queued
// copy or a late report) instead of calling them stuck.
//
// Layout: tables.go reads the database, report.go the vendor's report
// and the alert log, state.go builds the State, judge.go runs the
// invariants, render.go writes the markdown and JSON pages, run.go ties
// them together for the command.
package audit

import (
	"errors"
	"time"

	"github.com/outboxchaos/outboxchaos/auditor"
	"github.com/outboxchaos/outboxchaos/checker"
	"github.com/outboxchaos/outboxchaos/system/config"
)

// OutboxRecord is one notification_outbox row as the audit reads it.
type OutboxRecord struct {
	ID            int64     `json:"id"`
	DedupKey      string    `json:"dedup_key"`
	Kind          string    `json:"kind"`
	Status        string    `json:"status"`
	Reason        string    `json:"status_reason,omitempty"`
	Attempts      int       `json:"attempts"`
	MemberID      int64     `json:"member_id,omitempty"`
	Phone         string    `json:"phone,omitempty"`
	NextAttemptAt time.Time `json:"next_attempt_at,omitzero"`
	ClaimedBy     string    `json:"claimed_by,omitempty"`
	ClaimedUntil  time.Time `json:"claimed_until,omitzero"`
	CreatedAt     time.Time `json:"created_at,omitzero"`
	UpdatedAt     time.Time `json:"updated_at,omitzero"`
	PublishedAt   time.Time `json:"published_at,omitzero"`
	// Deferred: known by the caller to be due only later (an ad past the
	// cut-off). Set when a recorded run's state is audited; the database
	// reader leaves it false and Build decides from the times.
	Deferred bool `json:"-"`
}

// MessageID is the row's message_id.
func (r OutboxRecord) MessageID() string { return checker.MessageID(r.ID) }

// InboxRecord is one notification_histories row as the audit reads it.
type InboxRecord struct {
	ID         int64     `json:"id"`
	MessageID  string    `json:"message_id"`
	OutboxID   int64     `json:"outbox_id,omitempty"`
	DedupKey   string    `json:"dedup_key,omitempty"`
	Kind       string    `json:"kind,omitempty"`
	Phone      string    `json:"phone,omitempty"`
	Status     string    `json:"status"`
	VendorCode string    `json:"vendor_code,omitempty"`
	Error      string    `json:"error,omitempty"`
	CreatedAt  time.Time `json:"created_at,omitzero"`
	UpdatedAt  time.Time `json:"updated_at,omitzero"`
	Settled    string    `json:"settled,omitempty"`
	Resends    int       `json:"resends,omitempty"`
}

// Data is everything one audit reads: the rows, the report lines, the
// alerts, the members' consent when the database has a members table,
// and the snapshot's time.
type Data struct {
	Outbox []OutboxRecord
	Inbox  []InboxRecord
	Report []ReportLine
	// Alerts are the alerts sent; HasAlerts says an alert log was read
	// at all (no log: the invariants that read alerts are not judged).
	Alerts    []checker.AlertRecord
	HasAlerts bool
	// Consent is member id → may receive SMS (consents and is active);
	// nil when the database has no members table.
	Consent map[int64]bool
	// Now is the snapshot's time (the transaction's, by the database's
	// clock). Zero: the end of a recorded run, where nothing is in flight
	// but what a row says is deferred.
	Now time.Time
	// OutOfRange counts report lines left out as belonging to messages
	// outside the audited time range.
	OutOfRange int
}

// Settings are the deadlines and hours the audit judges by: the design's
// by default (Defaults), the pipeline's own when it runs with others.
type Settings struct {
	// Lease is the relay's claim lease: a row PUBLISHING past it is stuck.
	Lease time.Duration
	// SendingTimeout is cleanup's: an inbox row SENDING past it is stuck.
	SendingTimeout time.Duration
	// Grace is how long a message may wait between steps the tables do
	// not show (queued after its publish, a SENT row the report does not
	// list yet, an ERROR row the reconciler is settling) before the audit
	// judges it.
	Grace time.Duration
	// AlertAttempt is the relay's alert-attempt setting: a row whose
	// attempts reach it must be named by a RELAY_ATTEMPTS alert (0: not
	// checked).
	AlertAttempt int
	// Hours are the advertising hours.
	Hours auditor.Hours
}

// Defaults are the design's settings (system/config) and a grace of one
// hour.
func Defaults() Settings {
	c := config.Default()
	return Settings{
		Lease:          c.Lease,
		SendingTimeout: c.SendingTimeout,
		Grace:          time.Hour,
		AlertAttempt:   c.AlertAttempt,
		Hours: auditor.Hours{PublishCutoff: c.AdPublishCutoff.Minutes(), Resume: c.AdResumeAt.Minutes(),
			SendFrom: c.AdSendFrom.Minutes(), SendUntil: c.AdSendUntil.Minutes()},
	}
}

// NotJudgedError is an audit that could not judge: the database did not
// answer, a table is missing, a report or alert line is malformed. The
// command exits 3 on it.
type NotJudgedError struct{ Err error }

// Error is the cause's message.
func (e *NotJudgedError) Error() string { return e.Err.Error() }

// Unwrap returns the cause.
func (e *NotJudgedError) Unwrap() error { return e.Err }

// RefusedError is an audit refused before it read anything: the role may
// write an audited table. The command exits 2 on it.
type RefusedError struct{ Err error }

// Error is the cause's message.
func (e *RefusedError) Error() string { return e.Err.Error() }

// Unwrap returns the cause.
func (e *RefusedError) Unwrap() error { return e.Err }

// notJudged wraps err as a NotJudgedError.
func notJudged(err error) error {
	var nj *NotJudgedError
	if err == nil || errors.As(err, &nj) {
		return err
	}
	return &NotJudgedError{Err: err}
}
