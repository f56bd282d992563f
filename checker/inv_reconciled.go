package checker

import (
	"fmt"

	"github.com/outboxchaos/outboxchaos/history"
)

// settlementsAgree: no reconciler settlement is contradicted by the
// handset ledger: a row settled FAILED never reached a handset. (SENT yet
// never delivered is a silent loss already.)
var settlementsAgree = Invariant{
	Name: "settlements-agree",
	Doc:  "no row settled RECONCILED_FAILED reached a handset",
	Check: func(in Input) []string {
		var out []string
		for _, i := range in.Tally.Intents {
			if i.Enqueued && i.Inbox.Settled == history.SettledFailed && i.Handset > 0 {
				out = append(out, fmt.Sprintf("misreconciled: %s settled FAILED but reached the handset %d times", i.Inbox.MessageID, i.Handset))
			}
		}
		return out
	},
	Counter: func(v *Verdict) *int { return &v.Misreconciled },
}
