package history

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"
)

// Event is one recorded event of a run: a pod's structured log line with a
// KeyEvent attribute. At is its offset from the start of the run (what a
// recorded run keeps); Time is when the pod logged it (the line's "time"),
// known only while the run is live. Took is how long before Time the
// logged operation began, for an event that reports one (the line's
// KeyBegan): the operation ran within [At-Took, At].
type Event struct {
	At    time.Duration  `json:"at"`
	Took  time.Duration  `json:"took,omitempty"`
	Pod   string         `json:"pod"`
	Name  string         `json:"event"`
	Attrs map[string]any `json:"attrs,omitempty"`
	Time  time.Time      `json:"-"`
}

// Began returns the offset at which the logged operation began: At-Took
// (At when the event reports no beginning).
func (e Event) Began() time.Duration { return e.At - e.Took }

// Str returns attribute key as a string ("" if absent; non-strings are
// formatted with fmt).
func (e Event) Str(key string) string {
	v, ok := e.Attrs[key]
	if !ok || v == nil {
		return ""
	}
	if s, ok := v.(string); ok {
		return s
	}
	return fmt.Sprint(v)
}

// Int returns attribute key as an integer, accepting JSON numbers (also
// json.Number) and numeric strings.
func (e Event) Int(key string) (int64, bool) {
	switch v := e.Attrs[key].(type) {
	case float64:
		return int64(v), v == float64(int64(v))
	case int64:
		return v, true
	case int:
		return int64(v), true
	case json.Number:
		n, err := v.Int64()
		return n, err == nil
	case string:
		var n int64
		if _, err := fmt.Sscan(v, &n); err == nil {
			return n, true
		}
	}
	return 0, false
}

// Bool returns attribute key as a boolean (JSON true/false or their
// strings) and whether it is one.
func (e Event) Bool(key string) (value, ok bool) {
	switch v := e.Attrs[key].(type) {
	case bool:
		return v, true
	case string:
		switch v {
		case "true":
			return true, true
		case "false":
			return false, true
		}
	}
	return false, false
}

// IDs returns attribute key as a list of integers (a JSON array of
// numbers, as KeyIDs is logged).
func (e Event) IDs(key string) []int64 {
	var out []int64
	switch raw := e.Attrs[key].(type) {
	case []any:
		for _, x := range raw {
			if f, ok := x.(float64); ok {
				out = append(out, int64(f))
			}
		}
	case []int64:
		out = append(out, raw...)
	}
	return out
}

// Standard keys of slog's JSON handler: not attributes of an event.
var standardKeys = []string{"time", "level", "msg", KeyEvent}

// ParseLine decodes one output line of a pod. fields is the whole JSON
// object (nil if the line is not one); ok says whether it is an event,
// which ev then holds: the KeyEvent value, every other key but time, level
// and msg as attributes, and the line's time (now if it has none). A
// KeyBegan time becomes Took (its distance to the line's time), not an
// attribute.
func ParseLine(pod, line string, now time.Time) (ev Event, fields map[string]any, ok bool) {
	if !strings.HasPrefix(strings.TrimSpace(line), "{") {
		return Event{}, nil, false
	}
	if err := json.Unmarshal([]byte(line), &fields); err != nil {
		return Event{}, nil, false
	}
	name, _ := fields[KeyEvent].(string)
	if name == "" {
		return Event{}, fields, false
	}
	at := now
	if s, ok := fields["time"].(string); ok {
		if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
			at = t
		}
	}
	ev = Event{Pod: pod, Name: name, Attrs: Attrs(fields), Time: at}
	if s, ok := fields[KeyBegan].(string); ok {
		if t, err := time.Parse(time.RFC3339Nano, s); err == nil && !t.After(at) {
			ev.Took = at.Sub(t)
		}
		delete(ev.Attrs, KeyBegan)
	}
	return ev, fields, true
}

// Attrs returns only the attributes of fields (a decoded log line): every
// key but time, level, msg and KeyEvent.
func Attrs(fields map[string]any) map[string]any {
	attrs := make(map[string]any, len(fields))
	for k, v := range fields {
		if !slices.Contains(standardKeys, k) {
			attrs[k] = v
		}
	}
	return attrs
}

// legacyAckSteps maps the KeyWhy of an Ack recorded before workers logged
// KeyStep to its step: the one reader of the old form, so that recorded
// runs keep their verdicts while no rule reads KeyWhy.
var legacyAckSteps = map[string]string{
	"auto-ack on delivery":                         StepAutoAck,
	"history row exists":                           StepPeek,
	"claimed by another copy":                      StepClaim,
	"sent":                                         StepSent,
	"sent (acked before the result)":               StepSent,
	"vendor outcome unknown: ERROR, never retried": StepUnknown,
	"claim could not be released":                  StepRelease,
	"retry":                                        StepRetry,
	"park":                                         StepPark,
}

// UnmarshalJSON reads a recorded event, upgrading the old form: an Ack
// without KeyStep gets the step its KeyWhy named.
func (e *Event) UnmarshalJSON(b []byte) error {
	type plain Event
	if err := json.Unmarshal(b, (*plain)(e)); err != nil {
		return fmt.Errorf("decode event: %w", err)
	}
	if e.Name != Ack || e.Attrs == nil || e.Attrs[KeyStep] != nil {
		return nil
	}
	why := e.Str(KeyWhy)
	step, ok := legacyAckSteps[why]
	if !ok && strings.HasPrefix(why, "skipped: ") {
		step, ok = StepSkip, true
	}
	if ok {
		e.Attrs[KeyStep] = step
	}
	return nil
}

// LastOf returns the name of the latest event in evs named one of names,
// or "" if there is none. It reads back from the newest event.
func LastOf(evs []Event, names ...string) string {
	for i := len(evs) - 1; i >= 0; i-- {
		if slices.Contains(names, evs[i].Name) {
			return evs[i].Name
		}
	}
	return ""
}
