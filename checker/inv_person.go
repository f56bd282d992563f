package checker

import (
	"fmt"
	"time"

	"github.com/outboxchaos/outboxchaos/history"
)

// rightPerson: nothing reaches a member after they withdrew SMS consent,
// by the harness's own timeline. A send is owed the withdrawal when the
// copy it came from reached its sender after the withdrawal: the worker's
// pre-check (or a re-send's) ran after it and had to see it. A copy that
// was past its pre-check when the member withdrew may still go out.
var rightPerson = Invariant{
	Name:  "right-person",
	Doc:   "no message reaches a member whose consent the harness withdrew before the copy that was sent passed its pre-check",
	Needs: needsHarness,
	Check: func(in Input) []string {
		h := in.State.Harness
		var out []string
		for e, row := range in.Tally.Owned(in.State.Ledger) {
			if row.MemberID == 0 {
				continue
			}
			w, withdrew := h.Withdrawn(row.MemberID)
			if !withdrew {
				continue
			}
			if checked, ok := lastCheck(in.History, e.RefKey); ok && checked > w.At {
				out = append(out, fmt.Sprintf("wrong person: %s reached member %d at %s, who withdrew consent at +%s, before its copy's pre-check at +%s",
					e.RefKey, row.MemberID, e.Phone, w.At.Round(time.Millisecond), checked.Round(time.Millisecond)))
			}
		}
		return out
	},
}

// lastCheck returns the offset after which the accepted send of message
// mid last passed its pre-check: the delivery of the copy the sending pod
// called the vendor with, or the reconciler's re-send claim; ok is false
// when the history shows neither.
func lastCheck(h []history.Event, mid string) (time.Duration, bool) {
	var call *history.Event
	for i := range h {
		ev := &h[i]
		if ev.Name == history.VendorCall && ev.Str(history.KeyMessageID) == mid {
			call = ev
		}
	}
	if call == nil {
		return 0, false
	}
	var at time.Duration
	found := false
	for _, ev := range h {
		if ev.At > call.At || ev.Pod != call.Pod || ev.Str(history.KeyMessageID) != mid {
			continue
		}
		if ev.Name == history.Delivery || ev.Name == history.ResendClaim {
			at, found = ev.At, true
		}
	}
	return at, found
}
