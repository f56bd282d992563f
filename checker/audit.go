package checker

import (
	"fmt"
	"strings"

	"github.com/outboxchaos/outboxchaos/auditor"
	"github.com/outboxchaos/outboxchaos/history"
)

// Audit is the auditor's expectation of a run matched to its outbox
// rows: each expected notification with the row that carries it (if
// any), and the rows that no expected notification calls for.
type Audit struct {
	Expected []Expected
	// Extra are the outbox rows no business event the harness seeded
	// calls for, under the design's key table.
	Extra []OutboxRow
}

// Expected is one notification the auditor expects and the outbox row
// that carries it.
type Expected struct {
	auditor.Notification
	Row      OutboxRow
	Enqueued bool
	// Intent is the dedup key the tally accounts for it under: its row's,
	// else its own (for a coupon never enqueued, the key a lost-coupon
	// alert names, else the member it was owed to).
	Intent string
}

// NewAudit matches the auditor's notifications for s.Harness to s's
// outbox rows (nil when the run has no harness record).
func NewAudit(s State) *Audit {
	if s.Harness == nil {
		return nil
	}
	a := &Audit{}
	byKey := map[string]OutboxRow{}
	for _, r := range s.Outbox {
		byKey[r.DedupKey] = r
	}
	used := map[int64]bool{}
	var coupons []*Expected
	for _, n := range auditor.Expect(*s.Harness) {
		e := Expected{Notification: n, Intent: n.Key}
		if r, ok := byKey[n.Key]; ok && !n.Coupon {
			e.Row, e.Enqueued, used[r.ID] = r, true, true
		}
		if n.Optional && !e.Enqueued && !n.Coupon {
			// Owed only on the day the job did not take: neither missing
			// nor an intent.
			continue
		}
		a.Expected = append(a.Expected, e)
	}
	for i := range a.Expected {
		if a.Expected[i].Coupon {
			coupons = append(coupons, &a.Expected[i])
		}
	}
	// A coupon message is the member's row of its kind whose key has the
	// coupon form; a coupon never enqueued takes the key of a lost-coupon
	// alert no row has.
	for _, e := range coupons {
		for _, r := range s.Outbox {
			if !used[r.ID] && e.Matches(r.DedupKey) && r.MemberID == e.Member {
				e.Row, e.Enqueued, e.Intent, used[r.ID] = r, true, r.DedupKey, true
				break
			}
		}
	}
	lost := map[string]bool{}
	for _, al := range s.Alerts {
		if al.Kind == history.AlertAnniversaryLost && al.DedupKey != "" {
			if _, enqueued := byKey[al.DedupKey]; !enqueued {
				lost[al.DedupKey] = true
			}
		}
	}
	for _, e := range coupons {
		if e.Enqueued {
			continue
		}
		e.Intent = fmt.Sprintf("%smember-%d", e.Key, e.Member)
		for k := range lost {
			if e.Matches(k) {
				e.Intent = k
				delete(lost, k)
				break
			}
		}
	}
	for _, r := range s.Outbox {
		if !used[r.ID] {
			a.Extra = append(a.Extra, r)
		}
	}
	return a
}

// Intents are the dedup keys the tally accounts for: one per expected
// notification.
func (a *Audit) Intents() []string {
	out := make([]string, 0, len(a.Expected))
	for _, e := range a.Expected {
		out = append(out, e.Intent)
	}
	return out
}

// KindOf returns the kind of the notification a dedup key names: the
// design's keys start with their kind.
func KindOf(dedupKey string) string {
	k, _, _ := strings.Cut(dedupKey, ":")
	return k
}
