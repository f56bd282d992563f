package checker

import "fmt"

// rightIntents: the outbox holds exactly the notifications the auditor
// expects from the business rows the harness seeded, each under the key
// the design's table gives it and addressed to its member's number. A
// missing one is a loss (nothing-lost-silently counts it); an extra one
// is a message nobody owed, though it may reach a phone once.
var rightIntents = Invariant{
	Name:  "right-intents",
	Doc:   "the outbox holds exactly the notifications the harness's business rows call for, under the design's keys, to the right member",
	Needs: needsHarness,
	Check: func(in Input) []string {
		a := in.Tally.Audit
		var out []string
		for _, r := range a.Extra {
			out = append(out, fmt.Sprintf("wrong intent: outbox row %d %s: no business row the harness seeded calls for it", r.ID, r.DedupKey))
		}
		for _, e := range a.Expected {
			// A row read without its payload (a peer's own outbox) has no
			// addressee to compare.
			if !e.Enqueued || e.Row.MemberID == 0 {
				continue
			}
			if e.Row.MemberID != e.Member || e.Row.Phone != e.Phone {
				out = append(out, fmt.Sprintf("wrong intent: %s is addressed to member %d at %s, its business row to member %d at %s",
					e.Intent, e.Row.MemberID, e.Row.Phone, e.Member, e.Phone))
			}
		}
		return out
	},
}
