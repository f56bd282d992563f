package checker

import (
	"fmt"
	"maps"
	"slices"
	"sort"
	"time"

	"github.com/outboxchaos/outboxchaos/history"
)

// claimOrder is the age bound of sustained load: design §3's claim takes the
// due rows oldest first (ORDER BY next_attempt_at, id … FOR UPDATE SKIP
// LOCKED), so the only claim that may pass over an older due row is one
// that found it locked by another claim in flight — a claim that takes it
// (or fails) while the first runs. The bound derived from the design is
// therefore zero: no relay claim that ended before an older row's own
// claim began took a younger row while that older row was committed, due,
// PENDING and held by no one. See OrderViolations.
var claimOrder = Invariant{
	Name:  "claim-order",
	Doc:   "no relay claim took a younger row while an older due row waited, held by no other claim",
	Check: func(in Input) []string { return OrderViolations(in.History, in.Faults, in.State) },
}

// OrderViolations lists each outbox row a relay claim passed over while
// the row waited unheld (claimOrder). Every comparison is made on the
// side that cannot be wrong, from the pods' own timestamps:
//
//   - a row counts as committed from the last "job" event of its kind (the
//     job logs it after its transaction commits);
//   - a claim began no earlier than its KeyBegan (taken before the
//     statement was sent: Event.Began) and ended no later than its log
//     line (At); two claims overlapped unless one's line precedes the
//     other's beginning;
//   - a row's place in the order is its final next_attempt_at and id, so
//     rows whose next_attempt_at may have moved (a failed publish, an ad
//     deferred, more than one attempt) and rows that were ever reclaimed,
//     or lost a lease, are left out, as overtaken and as overtaker.
//
// What could hold a row without a claim event to show for it — a claim
// that failed (a relay's run-failed), a relay that died with a claim in
// flight (a life that started without the previous one stopping), any
// fault that can touch a relay or the database — ends the window judged:
// only claims that ended before the first such moment count. Runs whose
// relays log no KeyBegan (recorded before it, or a relay of another make)
// are not judged.
func OrderViolations(h []history.Event, faults []FaultRecord, s State) []string {
	var claims []history.Event
	for _, e := range h {
		if e.Name != history.Claim || !podMatches(e.Pod, "relay-") {
			continue
		}
		if e.Took <= 0 {
			return nil
		}
		claims = append(claims, e)
	}
	if len(claims) == 0 {
		return nil
	}
	judgedUntil := orderWindow(h, faults)
	moved, committed := map[int64]bool{}, map[string]time.Duration{}
	for _, e := range h {
		switch e.Name {
		case history.Reclaim:
			for _, id := range e.IDs(history.KeyIDs) {
				moved[id] = true
			}
		case history.PublishFailed, history.AdDeferred, history.LostLease:
			if id, ok := e.Int(history.KeyOutboxID); ok {
				moved[id] = true
			}
		case history.Job:
			committed[e.Str(history.KeyKind)] = max(committed[e.Str(history.KeyKind)], e.At)
		}
	}
	rows := map[int64]OutboxRow{}
	for _, r := range s.Outbox {
		if !r.Due.IsZero() && r.Attempts == 0 && !r.Deferred && !moved[r.ID] {
			rows[r.ID] = r
		}
	}
	first := map[int64]history.Event{}
	for _, c := range claims {
		for _, id := range c.IDs(history.KeyIDs) {
			if _, ok := first[id]; !ok {
				first[id] = c
			}
		}
	}
	passes := passesOf(claims, rows)
	var out []string
	for _, id := range slices.Sorted(maps.Keys(rows)) {
		old := rows[id]
		own, claimed := first[id]
		since, enqueued := committed[old.Kind]
		if !claimed || !enqueued {
			continue
		}
		if v := overtaker(old, own, since, judgedUntil, passes); v != "" {
			out = append(out, v)
		}
	}
	return out
}

// pass is one relay claim as the age bound reads it: when it began and
// ended, and the latest row in the claim order it took of those judged.
type pass struct {
	claim history.Event
	young OutboxRow
}

// passesOf returns the claims that took at least one judged row, in the
// order their lines were logged, each with its latest such row.
func passesOf(claims []history.Event, rows map[int64]OutboxRow) []pass {
	var out []pass
	for _, c := range claims {
		p, took := pass{claim: c}, false
		for _, id := range c.IDs(history.KeyIDs) {
			if r, ok := rows[id]; ok && (!took || claimedBefore(p.young, r)) {
				p.young, took = r, true
			}
		}
		if took {
			out = append(out, p)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].claim.At < out[j].claim.At })
	return out
}

// overtaker names the first claim that passed over old, "" if none did: a
// claim that began after old was committed, ended before old's own claim
// began and before the judged window closed, and took a judged row later
// than old in the claim order.
func overtaker(old OutboxRow, own history.Event, since, until time.Duration, passes []pass) string {
	for _, p := range passes {
		c := p.claim
		if c.At >= own.Began() || c.At >= until {
			break
		}
		if c.Began() <= since || !claimedBefore(old, p.young) {
			continue
		}
		return fmt.Sprintf("outbox row %d (%s, due %s) waited, committed since +%.3fs and held by no claim, while %s's claim (+%.3fs..+%.3fs) took row %d, due %s; its own claim began at +%.3fs",
			old.ID, old.DedupKey, old.Due.Format(time.RFC3339Nano), since.Seconds(), c.Pod, c.Began().Seconds(), c.At.Seconds(),
			p.young.ID, p.young.Due.Format(time.RFC3339Nano), own.Began().Seconds())
	}
	return ""
}

// claimedBefore reports whether a comes before b in the claim order
// (next_attempt_at, then id).
func claimedBefore(a, b OutboxRow) bool {
	if !a.Due.Equal(b.Due) {
		return a.Due.Before(b.Due)
	}
	return a.ID < b.ID
}

// orderWindow returns the offset from which claims are no longer judged:
// the first moment something could hold an outbox row without a claim
// event showing it (OrderViolations), or forever.
func orderWindow(h []history.Event, faults []FaultRecord) time.Duration {
	until := time.Duration(1<<63 - 1)
	for _, f := range faults {
		if !lockNeutral(f) {
			until = min(until, f.Start)
		}
	}
	alive := map[string]time.Duration{} // relay pod → start of a life not yet stopped
	for _, e := range h {
		if !podMatches(e.Pod, "relay-") {
			continue
		}
		switch e.Name {
		case history.RunFailed:
			return 0
		case history.Start:
			if began, ok := alive[e.Pod]; ok {
				until = min(until, began)
			}
			alive[e.Pod] = e.At
		case history.Stop:
			delete(alive, e.Pod)
		}
	}
	return until
}

// lockNeutral reports whether fault f cannot make a relay hold or release
// an outbox row unseen: it acts only on what holds no outbox row (the
// vendor, the workers and the batch job, their links, the broker and its
// links, the main queue, the inbox, a member). A job's rows are invisible
// to a claim until it commits, and a row counts as committed only from a
// later job event of its kind. A fault that does not say what it acts on
// may act on anything.
func lockNeutral(f FaultRecord) bool {
	if len(f.Components) == 0 {
		return false
	}
	for _, c := range f.Components {
		if !rowNeutral[c] {
			return false
		}
	}
	return true
}

// rowNeutral are the components that hold no outbox row, and reach none
// but through a claim the relay logs.
var rowNeutral = map[string]bool{
	"worker": true, "job": true, "vendor": true, "main queue": true, "inbox": true, "member": true,
	"postgres-worker": true, "postgres-job": true, "rabbitmq-relay": true, "rabbitmq-worker": true,
	"nats-relay": true, "nats-worker": true, "nats": true,
	"rabbitmq": true, "rabbitmq-1": true, "rabbitmq-2": true, "rabbitmq-3": true,
}
