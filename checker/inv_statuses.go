package checker

import (
	"fmt"

	"github.com/outboxchaos/outboxchaos/history"
)

// statusesAgree: a row the handset ledger shows received is not finally
// reported lost: its outbox row is not EXPIRED or FAILED, its inbox row
// not FAILED. (A FAILED settlement the ledger contradicts is
// settlements-agree's; a SENT row that never arrived is
// nothing-lost-silently's.)
var statusesAgree = Invariant{
	Name:  "statuses-agree",
	Doc:   "no message that reached a phone ends reported lost: outbox EXPIRED or FAILED, inbox FAILED",
	Needs: needsHarness,
	Check: func(in Input) []string {
		var out []string
		for _, f := range in.Tally.Intents {
			if f.Handset == 0 || !f.Enqueued {
				continue
			}
			mid := MessageID(f.Row.ID)
			switch {
			case f.Row.Status == history.OutboxExpired || f.Row.Status == history.OutboxFailed:
				out = append(out, fmt.Sprintf("status disagrees: %s reached a phone, its outbox row is %s (%s)", mid, f.Row.Status, f.Row.Reason))
			case f.HasInbox && f.Inbox.Status == history.InboxFailed && f.Inbox.Settled == "":
				out = append(out, fmt.Sprintf("status disagrees: %s reached a phone, its inbox row is FAILED", mid))
			}
		}
		return out
	},
}
