package checker

import (
	"fmt"
	"sort"
)

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
func RepublishViolations(history []Event, faults []FaultRecord) []string {
	claims := map[int64]int{}
	for _, e := range history {
		if e.Name != "claim" || !podMatches(e.Pod, "relay-") {
			continue
		}
		for _, id := range idList(e) {
			claims[id]++
		}
	}
	if len(claims) == 0 {
		return nil
	}
	pubs, failed, reclaims := map[int64]int{}, map[int64]int{}, map[int64]int{}
	fresh, retries, replays := map[string]int{}, map[string]int{}, map[string]int{}
	retryAcks := map[string]int{}
	for _, e := range history {
		switch {
		case e.Name == "publish" && podMatches(e.Pod, "relay-"):
			id, _ := e.Int("outbox_id")
			pubs[id]++
			if e.Str("outcome") != "confirmed" {
				failed[id]++
			}
		case e.Name == "reclaim" && podMatches(e.Pod, "relay-"):
			for _, id := range idList(e) {
				reclaims[id]++
			}
		case e.Name == "delivery" && e.Str("redelivered") == "false":
			fresh[e.Str("message_id")]++
		case e.Name == "republish" && e.Str("to") == "retry":
			// Logged before the publish: an upper bound even when the
			// worker died before it knew whether the copy went out.
			retries[e.Str("message_id")]++
		case e.Name == "ack" && e.Str("why") == "retry":
			// Histories recorded before workers logged "republish".
			retryAcks[e.Str("message_id")]++
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

// idList reads an event's "ids" attribute (a JSON array of numbers).
func idList(e Event) []int64 {
	raw, _ := e.Attrs["ids"].([]any)
	out := make([]int64, 0, len(raw))
	for _, x := range raw {
		if f, ok := x.(float64); ok {
			out = append(out, int64(f))
		}
	}
	return out
}
