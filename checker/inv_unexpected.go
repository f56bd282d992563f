package checker

import "fmt"

// nothingUnexpected: every message a handset got belongs to an outbox
// row, and (outside production) went to a registered number.
var nothingUnexpected = Invariant{
	Name: "nothing-unexpected",
	Doc:  "every message a handset got is owed by an outbox row and, outside production, to a registered number",
	Check: func(in Input) []string {
		var out []string
		for _, e := range in.State.Ledger {
			_, owned := in.Tally.ByMID[e.RefKey]
			switch {
			case !owned:
				out = append(out, fmt.Sprintf("unexpected: handset got refkey %q that no outbox row owns", e.RefKey))
			case !in.State.Production && !in.Tally.Registered[e.Phone]:
				out = append(out, fmt.Sprintf("unexpected: %s sent to unregistered number %s", e.RefKey, e.Phone))
			}
		}
		return out
	},
	Counter: func(v *Verdict) *int { return &v.Unexpected },
}
