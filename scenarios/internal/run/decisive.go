package run

import (
	"strings"

	"github.com/outboxchaos/outboxchaos/checker"
	"github.com/outboxchaos/outboxchaos/history"
	"github.com/outboxchaos/outboxchaos/rig"
)

// Why a timeline line decided its run's verdict.
const (
	DecidedFault    = "fault"    // a fault put in place (or armed in a pod)
	DecidedFired    = "fired"    // a pod reached a kill-, fail- or pause-point
	DecidedAbsorbed = "absorbed" // a copy of a message the inbox had already taken: acked, not sent
	DecidedAlert    = "alert"    // an alert raised
	DecidedTwice    = "twice"    // a send of a message that reached a phone more than once
	DecidedLoss     = "loss"     // what lost a message: expired, failed, parked, timed out
)

// Decision is one timeline line that decided its run's verdict.
type Decision struct {
	Line  int    // the index of the line's entry in rig.ParseTimeline(r.Timeline)
	Why   string // a Decided* value
	Entry rig.Entry
	// Event is the pod's event the line shows (nil for a fault's line).
	Event *history.Event
}

// absorbed reports whether ev is a copy the inbox turned away: a peek
// that found the message's row, a claim another copy holds, a peer
// consumer's processed table.
func absorbed(ev history.Event) bool {
	switch ev.Name {
	case history.ClaimLost, history.AlreadyProcessed:
		return true
	case history.Ack:
		return ev.Str(history.KeyStep) == history.StepPeek
	}
	return false
}

// lossEvents are the events that make a message lost, visibly or not.
var lossEvents = map[string]bool{
	history.AnniversaryLost: true, history.OutboxFinal: true, history.Park: true,
	history.SendingTimeout: true, history.Result: true, history.Settle: true,
}

// Decisive returns the lines of r's timeline that decided its verdict, in
// timeline order: each fault the harness put in place or armed, each
// kill-, fail- or pause-point a pod reached, each copy the inbox
// absorbed, each alert, each send of a message that reached a phone more
// than once, and each event that lost a message. A pod's line is known
// by the event it shows, from the run's history (the n-th line of a pod
// tagged with an event name is that pod's n-th event of that name), not
// by its words.
func Decisive(r Result, entries []rig.Entry) []Decision {
	var out []Decision
	faults := faultLines(r.Faults, entries)
	twice, lost := fates(r.State)
	events := podEvents(r.Events)
	seen := map[[2]string]int{}
	for i, e := range entries {
		if faults[i] {
			out = append(out, Decision{Line: i, Why: DecidedFault, Entry: e})
			continue
		}
		if firedLine(e.Text) {
			out = append(out, Decision{Line: i, Why: DecidedFired, Entry: e})
			continue
		}
		name := eventName(e.Text)
		if name == "" {
			continue
		}
		k := [2]string{e.Source, name}
		n := seen[k]
		seen[k]++
		if n >= len(events[k]) {
			continue
		}
		ev := events[k][n]
		why := ""
		switch {
		case absorbed(ev):
			why = DecidedAbsorbed
		case ev.Name == history.Alert:
			why = DecidedAlert
		case ev.Name == history.VendorCall && twice.has(ev):
			why = DecidedTwice
		case lossEvents[ev.Name] && lost.has(ev):
			why = DecidedLoss
		}
		if why != "" {
			out = append(out, Decision{Line: i, Why: why, Entry: e, Event: &ev})
		}
	}
	return out
}

// podEvents groups a history by pod and event name, each group in the
// history's order.
func podEvents(h []history.Event) map[[2]string][]history.Event {
	out := map[[2]string][]history.Event{}
	for _, ev := range h {
		k := [2]string{ev.Pod, ev.Name}
		out[k] = append(out[k], ev)
	}
	return out
}

// eventName is the event a pod's timeline text shows ("" if none): the
// " [name]" tag (eventTag) world's summary of a log line carries.
func eventName(text string) string {
	if m := eventTag.FindStringSubmatch(text); m != nil {
		return m[1]
	}
	return ""
}

// firedLine reports whether text is a pod's "KILLPOINT|FAILPOINT|PAUSEPOINT
// <name> hit <n>", the line system/killpoint writes as the point fires.
func firedLine(text string) bool {
	f := strings.Fields(text)
	if len(f) != 4 || f[2] != "hit" {
		return false
	}
	switch f[0] {
	case "KILLPOINT", "FAILPOINT", "PAUSEPOINT":
		return true
	}
	return false
}

// faultLines finds the line on which each recorded fault was put in place
// ("injected F") or armed ("armed F"): the faults' engine writes each
// fault as the record's Detail begins.
func faultLines(rs []checker.FaultRecord, entries []rig.Entry) map[int]bool {
	out := map[int]bool{}
	for _, f := range rs {
		for i, e := range entries {
			if out[i] || e.Source != "faults" {
				continue
			}
			verb, what, _ := strings.Cut(e.Text, " ")
			if (verb == "injected" || verb == "armed") && strings.HasPrefix(f.Detail, what+": ") {
				out[i] = true
				break
			}
		}
	}
	return out
}

// messages are the messages of some intents, known by message_id (either
// format), outbox id or dedup key.
type messages struct {
	mids map[string]bool
	ids  map[int64]bool
	keys map[string]bool
}

func newMessages() messages {
	return messages{mids: map[string]bool{}, ids: map[int64]bool{}, keys: map[string]bool{}}
}

// add adds intent f; mids are the message_ids of each outbox row.
func (m messages) add(f checker.IntentFate, mids map[int64][]string) {
	m.keys[f.Key] = true
	if !f.Enqueued {
		return
	}
	m.ids[f.Row.ID] = true
	for _, mid := range mids[f.Row.ID] {
		m.mids[mid] = true
	}
}

// has reports whether ev is about one of the messages.
func (m messages) has(ev history.Event) bool {
	if mid := ev.Str(history.KeyMessageID); mid != "" && m.mids[mid] {
		return true
	}
	if id, ok := ev.Int(history.KeyOutboxID); ok && m.ids[id] {
		return true
	}
	k := ev.Str(history.KeyDedupKey)
	return k != "" && m.keys[k]
}

// fates returns the messages that reached a phone more than once and
// those that never reached one, as the checker's tally of s has them.
func fates(s checker.State) (twice, lost messages) {
	twice, lost = newMessages(), newMessages()
	t := checker.NewTally(s)
	mids := midsByRow(t)
	for _, f := range t.Intents {
		switch f.Fate {
		case checker.FateDuplicated:
			twice.add(f, mids)
		case checker.FateLostSilently, checker.FateLostVisibly:
			lost.add(f, mids)
		}
	}
	return twice, lost
}

// midsByRow maps each outbox row of t to its message_ids (either format).
func midsByRow(t checker.Tally) map[int64][]string {
	out := map[int64][]string{}
	for mid, row := range t.ByMID {
		out[row.ID] = append(out[row.ID], mid)
	}
	return out
}
