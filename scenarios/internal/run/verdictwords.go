package run

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/outboxchaos/outboxchaos/checker"
	"github.com/outboxchaos/outboxchaos/history"
	"github.com/outboxchaos/outboxchaos/rig"
)

// InWords says in one line why r passed, failed or was not judged,
// pointing at the timeline lines that decided it (Decisive) by pod and
// time: "PASS: 6 of 6 delivered once under 1 fault; a second copy of
// notification-outbox-3 reached worker-1, the inbox absorbed it
// (+5.292s)", "FAIL: notification-outbox-3 reached a phone twice, sent by
// worker-1 +3.967s and worker-2 +5.306s (nothing-twice)".
func (r Result) InWords() string {
	switch r.Outcome() {
	case OutcomeError:
		return "ERROR: not judged, so it says nothing of the contract: " + firstLine(r.NotJudged.Error())
	case OutcomeFail:
		return "FAIL: " + r.failWords(Decisive(r, rig.ParseTimeline(r.Timeline)))
	}
	return "PASS: " + r.passWords(Decisive(r, rig.ParseTimeline(r.Timeline)))
}

func (r Result) passWords(ds []Decision) string {
	v := r.Verdict
	var counts []string
	if v.Intents == 0 {
		counts = append(counts, "no notification was owed")
	} else {
		counts = append(counts, fmt.Sprintf("%d of %d delivered once", v.DeliveredOnce, v.Intents))
	}
	if v.LostVisibly > 0 {
		counts = append(counts, fmt.Sprintf("%d lost visibly, each with its alert", v.LostVisibly))
	}
	if v.Skipped > 0 {
		counts = append(counts, fmt.Sprintf("%d skipped on purpose", v.Skipped))
	}
	if v.Deferred > 0 {
		counts = append(counts, fmt.Sprintf("%d deferred past the run", v.Deferred))
	}
	first := strings.Join(counts, ", ")
	if n := len(r.Faults); n > 0 {
		first += fmt.Sprintf(" under %d fault%s", n, plural(n))
	}
	clauses := []string{first}
	if s := absorbedWords(ds); s != "" {
		clauses = append(clauses, s)
	}
	if s := alertWords(ds); s != "" {
		clauses = append(clauses, s)
	}
	return strings.Join(clauses, "; ")
}

// absorbedWords tells the copies the inbox absorbed ("" if none).
func absorbedWords(ds []Decision) string {
	var got []Decision
	msgs := map[string]bool{}
	for _, d := range ds {
		if d.Why == DecidedAbsorbed {
			got = append(got, d)
			msgs[d.Event.Str(history.KeyMessageID)] = true
		}
	}
	switch len(got) {
	case 0:
		return ""
	case 1:
		d := got[0]
		return fmt.Sprintf("a second copy of %s reached %s, the inbox absorbed it (%s)",
			d.Event.Str(history.KeyMessageID), d.Entry.Source, stamp(d.Entry))
	}
	return fmt.Sprintf("%d more copies of %d message%s reached the workers, the inbox absorbed each (first: %s)",
		len(got), len(msgs), plural(len(msgs)), where(got[0].Entry))
}

// alertWords tells the alerts raised ("" if none).
func alertWords(ds []Decision) string {
	var got []Decision
	var kinds []string
	count := map[string]int{}
	for _, d := range ds {
		if d.Why != DecidedAlert {
			continue
		}
		got = append(got, d)
		k := d.Event.Str(history.KeyKind)
		if count[k] == 0 {
			kinds = append(kinds, k)
		}
		count[k]++
	}
	if len(got) == 0 {
		return ""
	}
	if len(got) == 1 {
		return fmt.Sprintf("alert %s raised (%s)", kinds[0], where(got[0].Entry))
	}
	for i, k := range kinds {
		if count[k] > 1 {
			kinds[i] = fmt.Sprintf("%s ×%d", k, count[k])
		}
	}
	return fmt.Sprintf("%d alerts raised: %s (first: %s)", len(got), strings.Join(kinds, ", "), where(got[0].Entry))
}

func (r Result) failWords(ds []Decision) string {
	v := r.Verdict
	broken := v.Broken()
	switch {
	case len(broken) > 0 && r.Err != nil:
		return r.contractWords(ds, broken) + "; and " + shorten(firstLine(r.Err.Error()), errWords)
	case len(broken) > 0:
		return r.contractWords(ds, broken)
	case r.Err != nil:
		return firstLine(r.Err.Error())
	case len(v.Details) > 0:
		// A verdict recorded before invariants had names: its details.
		return v.Details[0]
	}
	return "the contract was broken"
}

// errWords bounds the words a failed step or rule adds to a broken
// contract's.
const errWords = 120

// contractWords tells the first broken invariant's first violation, by
// the invariant's name, and how many more there are.
func (r Result) contractWords(ds []Decision, broken []string) string {
	v := r.Verdict
	details := invariantDetails(v)
	name := broken[0]
	s := ""
	if name == "nothing-twice" {
		s = twiceWords(r.State, ds)
	}
	if s == "" && len(details[name]) > 0 {
		s = details[name][0]
	}
	if s == "" {
		s = "broke " + name
	} else {
		s += " (" + name + ")"
	}
	if n := len(details[name]) - 1; n > 0 {
		s += fmt.Sprintf("; %d more like it", n)
	}
	if len(broken) > 1 {
		s += "; also broke " + strings.Join(broken[1:], ", ")
	}
	return s
}

// invariantDetails maps each broken invariant to its violations' details:
// a verdict's details end with every invariant's, in registry order, each
// as many as its violations.
func invariantDetails(v checker.Verdict) map[string][]string {
	total := 0
	for _, res := range v.Invariants {
		total += res.Violations
	}
	if total > len(v.Details) {
		return nil
	}
	out := map[string][]string{}
	i := len(v.Details) - total
	for _, res := range v.Invariants {
		out[res.Name] = v.Details[i : i+res.Violations]
		i += res.Violations
	}
	return out
}

// twiceWords tells the first message that reached a phone more than once
// and the sends of it the timeline shows.
func twiceWords(s checker.State, ds []Decision) string {
	t := checker.NewTally(s)
	for _, f := range t.Intents {
		if f.Fate != checker.FateDuplicated {
			continue
		}
		one := newMessages()
		one.add(f, midsByRow(t))
		var sends []string
		for _, d := range ds {
			if d.Why == DecidedTwice && one.has(*d.Event) {
				sends = append(sends, where(d.Entry))
			}
		}
		times := "twice"
		if f.Handset != 2 {
			times = fmt.Sprintf("%d times", f.Handset)
		}
		out := fmt.Sprintf("%s reached a phone %s", checker.MessageID(f.Row.ID), times)
		switch n := len(sends); {
		case n > 3:
			out += fmt.Sprintf(", sent %d times: first by %s, last by %s", n, sends[0], sends[n-1])
		case n > 0:
			out += ", sent by " + joinAnd(sends)
		}
		return out
	}
	return ""
}

// where names a timeline line by its source and time: "worker-1 +5.292s".
func where(e rig.Entry) string { return e.Source + " " + stamp(e) }

func stamp(e rig.Entry) string { return fmt.Sprintf("+%.3fs", e.At.Seconds()) }

func joinAnd(xs []string) string {
	if len(xs) < 2 {
		return strings.Join(xs, "")
	}
	return strings.Join(xs[:len(xs)-1], ", ") + " and " + xs[len(xs)-1]
}

// shorten cuts s to n bytes at most, at a space if there is one in its
// second half, ending it with "…" if it was cut.
func shorten(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n
	if sp := strings.LastIndexByte(s[:n+1], ' '); sp > n/2 {
		cut = sp
	}
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return strings.TrimRight(s[:cut], " ") + "…"
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}
