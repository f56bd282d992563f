package audittest

import (
	"testing"
	"time"

	"github.com/outboxchaos/outboxchaos/auditor"
	"github.com/outboxchaos/outboxchaos/checker"
	"github.com/outboxchaos/outboxchaos/history"
	"github.com/outboxchaos/outboxchaos/system/testenv"
)

// Files are the report and alert log a data set comes with.
type Files struct {
	Report string
	Alerts string
}

// seoul is the time of day hh:mm in Seoul on t's Seoul day (the day
// before the snapshot's, in the data sets: a time already past).
func seoul(t time.Time, h, m int) time.Time {
	d := t.In(auditor.Seoul)
	return time.Date(d.Year(), d.Month(), d.Day(), h, m, 0, 0, auditor.Seoul)
}

// Clean seeds a data set the audit must pass: messages delivered once, a
// visible loss with its alert, an ERROR row settled as sent, an advert
// inside its hours, and messages still in flight within their deadlines.
func Clean(t testing.TB, db *testenv.DB, dir string) Files {
	t.Helper()
	now := Now()
	old := now.Add(-3 * time.Hour)
	SeedOutbox(t, db,
		Outbox{ID: 1, Created: old},
		Outbox{ID: 2, Created: old},
		Outbox{ID: 3, Status: "EXPIRED", Created: old},
		Outbox{ID: 4, Created: old},
		Outbox{ID: 5, Kind: auditor.MissionRemind, Created: old},
		// In flight: waiting, within the lease, claimed a minute ago,
		// published a minute ago.
		Outbox{ID: 6, Status: "PENDING"},
		Outbox{ID: 7, Status: "PUBLISHING", ClaimedUntil: now.Add(10 * time.Minute)},
		Outbox{ID: 8, Created: now.Add(-2 * time.Minute)},
		Outbox{ID: 9, Created: now.Add(-time.Minute)},
	)
	SeedInbox(t, db,
		Inbox{OutboxID: 1, Created: old},
		Inbox{OutboxID: 2, Created: old},
		Inbox{OutboxID: 4, Status: "ERROR", Settled: history.SettledSent, Created: old},
		Inbox{OutboxID: 5, Created: old},
		Inbox{OutboxID: 8, Status: "SENDING", Created: now.Add(-time.Minute)},
	)
	return Files{
		Report: WriteCSV(t, dir,
			Line{RefKey: checker.MessageID(1), At: old},
			Line{RefKey: checker.MessageID(2), At: old},
			Line{RefKey: checker.MessageID(4), At: old},
			Line{RefKey: checker.MessageID(5), At: seoul(now.Add(-24*time.Hour), 12, 0)},
			Line{RefKey: checker.MessageID(3), Status: "FAILED", At: old},
		),
		Alerts: WriteAlerts(t, dir,
			checker.AlertRecord{Kind: history.AlertExpired, OutboxID: 3, MessageID: checker.MessageID(3)},
			checker.AlertRecord{Kind: history.AlertVendorUnknown, MessageID: checker.MessageID(4)},
			checker.AlertRecord{Kind: history.AlertReconciledSent, MessageID: checker.MessageID(4)},
		),
	}
}

// Planted seeds one anomaly of each kind beside a clean message, and
// returns its files and how many violations each invariant must find.
func Planted(t testing.TB, db *testenv.DB, dir string) (Files, map[string]int) {
	t.Helper()
	now := Now()
	old := now.Add(-3 * time.Hour)
	SeedOutbox(t, db,
		Outbox{ID: 10, Created: old},                    // clean
		Outbox{ID: 11, Created: old},                    // twice, by message id
		Outbox{ID: 12, Created: old},                    // twice, by dedup key
		Outbox{ID: 13, Created: old},                    // lost silently: published, no row, no line, no alert
		Outbox{ID: 14, Status: "EXPIRED", Created: old}, // false alarm: EXPIRED, delivered
		Outbox{ID: 15, Created: old},                    // false alarm: settled FAILED, delivered
		Outbox{ID: 16, Status: "PUBLISHING", Created: old, ClaimedUntil: old.Add(15 * time.Minute)}, // stuck past its lease
		Outbox{ID: 17, Created: old},                              // stuck SENDING past the timeout
		Outbox{ID: 18, Created: old},                              // ERROR never settled
		Outbox{ID: 19, Kind: auditor.MissionRemind, Created: old}, // an advert at 22:00
	)
	SeedInbox(t, db,
		Inbox{OutboxID: 10, Created: old},
		Inbox{OutboxID: 11, Created: old},
		Inbox{OutboxID: 12, Created: old},
		Inbox{OutboxID: 15, Status: "FAILED", Settled: history.SettledFailed, Created: old},
		Inbox{OutboxID: 17, Status: "SENDING", Created: old},
		Inbox{OutboxID: 18, Status: "ERROR", Created: old},
		Inbox{OutboxID: 19, Created: old},
	)
	files := Files{
		Report: WriteCSV(t, dir,
			Line{RefKey: checker.MessageID(10), At: old},
			Line{RefKey: checker.MessageID(11), At: old},
			Line{RefKey: checker.MessageID(11), At: old.Add(time.Minute)},
			Line{RefKey: checker.MessageID(12), At: old},
			Line{RefKey: "legacy-12", At: old.Add(time.Minute), DedupKey: Outbox{ID: 12}.Key()},
			Line{RefKey: checker.MessageID(14), At: old},
			Line{RefKey: checker.MessageID(15), At: old},
			Line{RefKey: checker.MessageID(19), At: seoul(now.Add(-24*time.Hour), 22, 0)},
			Line{RefKey: checker.MessageID(999999), At: old}, // no outbox row
		),
		Alerts: WriteAlerts(t, dir,
			checker.AlertRecord{Kind: history.AlertExpired, OutboxID: 14},
			checker.AlertRecord{Kind: history.AlertReconciledFailed, MessageID: checker.MessageID(15)},
			checker.AlertRecord{Kind: history.AlertVendorUnknown, MessageID: checker.MessageID(18)},
		),
	}
	return files, map[string]int{
		"nothing-unexpected":    1, // 999999
		"nothing-twice":         2, // 11, 12
		"nothing-lost-silently": 1, // 13
		"nothing-stuck":         2, // 16, 17
		"settlements-agree":     1, // 15
		"right-time":            1, // 19
		"true-alerts":           2, // 14, 15
		"statuses-agree":        1, // 14
		"errors-settled":        1, // 18
	}
}
