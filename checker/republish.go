package checker

import (
	"fmt"
	"sort"

	"github.com/outboxchaos/outboxchaos/history"
)

// republishBound: no row is published, and no copy reaches workers, more
// often than the history explains (RepublishViolations).
var republishBound = Invariant{
	Name:    "republish-bound",
	Doc:     "no row published, and no fresh copy delivered, more often than its failures, reclaims, retries and replays explain",
	Check:   func(in Input) []string { return RepublishViolations(in.History, in.Faults) },
	Counter: func(v *Verdict) *int { return &v.Republished },
}

// RepublishViolations bounds how often each outbox row our relay claimed
// was published, by what the history says caused it. A republish storm
// the inbox absorbs never reaches a handset twice, yet it is a bug: every
// copy costs a delivery, a peek and a database round trip, and the next
// one may land in a window the inbox does not cover.
//
//   - The relay's own account: a row is published at most once, plus once
//     after each publish of it that did not come back confirmed, plus once
//     after each lease reclaim that handed it back (a relay that died or
//     stalled past its lease).
//   - Ground truth, the fresh copies workers received (first deliveries,
//     not redeliveries of one copy): at most one per relay claim of the
//     row, one per retry-queue round trip a worker set out to send it on
//     (logged before the publish), and one per operator replay of its
//     parked copy.
//
// Rows no "claim" event names (a relay under test of another make) are
// not judged.
func RepublishViolations(h []history.Event, faults []FaultRecord) []string {
	claims := map[int64]int{}
	for _, e := range h {
		if e.Name != history.Claim || !podMatches(e.Pod, "relay-") {
			continue
		}
		for _, id := range e.IDs(history.KeyIDs) {
			claims[id]++
		}
	}
	if len(claims) == 0 {
		return nil
	}
	pubs, failed, reclaims := map[int64]int{}, map[int64]int{}, map[int64]int{}
	fresh, retries, replays := map[string]int{}, map[string]int{}, map[string]int{}
	retryAcks := map[string]int{}
	for _, e := range h {
		switch {
		case e.Name == history.Publish && podMatches(e.Pod, "relay-"):
			id, _ := e.Int(history.KeyOutboxID)
			pubs[id]++
			if e.Str(history.KeyOutcome) != history.OutcomeConfirmed {
				failed[id]++
			}
		case e.Name == history.Reclaim && podMatches(e.Pod, "relay-"):
			for _, id := range e.IDs(history.KeyIDs) {
				reclaims[id]++
			}
		case e.Name == history.Delivery && isFresh(e):
			fresh[e.Str(history.KeyMessageID)]++
		case e.Name == history.Republish && e.Str(history.KeyTo) == history.ToRetry:
			// Logged before the publish: an upper bound even when the
			// worker died before it knew whether the copy went out.
			retries[e.Str(history.KeyMessageID)]++
		case e.Name == history.Ack && e.Str(history.KeyStep) == history.StepRetry:
			// Histories recorded before workers logged Republish.
			retryAcks[e.Str(history.KeyMessageID)]++
		}
	}
	for m, n := range retryAcks {
		retries[m] = max(retries[m], n)
	}
	for _, f := range faults {
		if f.Kind == "replay-parked" && f.Fired {
			replays[f.Target]++
		}
	}
	ids := make([]int64, 0, len(claims))
	for id := range claims {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	var out []string
	for _, id := range ids {
		if bound := 1 + failed[id] + reclaims[id]; pubs[id] > bound {
			out = append(out, fmt.Sprintf("republish: outbox row %d published %d times; its failures (%d) and lease reclaims (%d) explain %d",
				id, pubs[id], failed[id], reclaims[id], bound))
		}
		mid := MessageID(id)
		if bound := claims[id] + retries[mid] + replays[mid]; fresh[mid] > bound {
			out = append(out, fmt.Sprintf("republish: %s reached workers as %d fresh copies; its relay claims (%d), retries (%d) and replays (%d) explain %d",
				mid, fresh[mid], claims[id], retries[mid], replays[mid], bound))
		}
	}
	return out
}

// isFresh reports whether a delivery is a copy's first (not a redelivery).
func isFresh(e history.Event) bool {
	redelivered, ok := e.Bool(history.KeyRedelivered)
	return ok && !redelivered
}
