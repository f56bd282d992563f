package history

import (
	"encoding/json"
	"testing"
	"time"
)

// TestParseLine: a slog JSON line with an event key becomes an Event with
// every other key but time, level and msg as attributes, at the line's
// time; other lines are not events.
func TestParseLine(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	line := `{"time":"2026-03-01T09:00:00.5Z","level":"INFO","msg":"publish outcome","event":"publish","outbox_id":3,"message_id":"notification-outbox-3","outcome":"confirmed","ids":[1,2]}`
	ev, fields, ok := ParseLine("relay-1", line, now)
	if !ok || ev.Name != Publish || ev.Pod != "relay-1" || fields["msg"] != "publish outcome" {
		t.Fatalf("ParseLine = %+v, %v, %v", ev, fields, ok)
	}
	if id, ok := ev.Int(KeyOutboxID); !ok || id != 3 {
		t.Errorf("outbox_id = %d, %v", id, ok)
	}
	if ev.Str(KeyOutcome) != OutcomeConfirmed || len(ev.IDs(KeyIDs)) != 2 {
		t.Errorf("attrs %v", ev.Attrs)
	}
	for _, k := range []string{"time", "level", "msg", KeyEvent} {
		if _, has := ev.Attrs[k]; has {
			t.Errorf("attribute %s kept", k)
		}
	}
	if want := time.Date(2026, 3, 1, 9, 0, 0, 5e8, time.UTC); !ev.Time.Equal(want) {
		t.Errorf("time %v, want %v", ev.Time, want)
	}
	if _, fields, ok := ParseLine("w", `{"msg":"no event"}`, now); ok || fields == nil {
		t.Errorf("a line without an event: ok=%v fields=%v", ok, fields)
	}
	if _, fields, ok := ParseLine("w", "KILLPOINT x hit 1", now); ok || fields != nil {
		t.Errorf("a plain line: ok=%v fields=%v", ok, fields)
	}
	if ev, _, _ := ParseLine("w", `{"event":"ack"}`, now); !ev.Time.Equal(now) {
		t.Errorf("a line without time is stamped when read: %v", ev.Time)
	}
}

// TestAccessors: numbers, booleans and id lists read the same from a live
// line and from a recorded run.
func TestAccessors(t *testing.T) {
	t.Parallel()
	e := Event{Attrs: map[string]any{"n": float64(4), "s": "5", "b": false, "bs": "true", "ids": []any{float64(1), float64(9)}, "j": json.Number("7")}}
	if n, ok := e.Int("n"); !ok || n != 4 {
		t.Errorf("n = %d %v", n, ok)
	}
	if n, ok := e.Int("s"); !ok || n != 5 {
		t.Errorf("s = %d %v", n, ok)
	}
	if n, ok := e.Int("j"); !ok || n != 7 {
		t.Errorf("j = %d %v", n, ok)
	}
	if b, ok := e.Bool("b"); !ok || b {
		t.Errorf("b = %v %v", b, ok)
	}
	if b, ok := e.Bool("bs"); !ok || !b {
		t.Errorf("bs = %v %v", b, ok)
	}
	if _, ok := e.Bool("missing"); ok {
		t.Error("a missing attribute is no boolean")
	}
	if ids := e.IDs("ids"); len(ids) != 2 || ids[1] != 9 {
		t.Errorf("ids = %v", ids)
	}
	if e.Str("b") != "false" || e.Str("missing") != "" {
		t.Errorf("Str: %q %q", e.Str("b"), e.Str("missing"))
	}
}

// TestLegacyAck: an ack recorded before workers logged their step gets the
// step its prose named, and a new one keeps its own.
func TestLegacyAck(t *testing.T) {
	t.Parallel()
	for raw, want := range map[string]string{
		`{"at":1,"pod":"worker-1","event":"ack","attrs":{"why":"history row exists"}}`:                StepPeek,
		`{"at":1,"pod":"worker-1","event":"ack","attrs":{"why":"retry"}}`:                             StepRetry,
		`{"at":1,"pod":"worker-1","event":"ack","attrs":{"why":"skipped: CONSENT_WITHDRAWN"}}`:        StepSkip,
		`{"at":1,"pod":"worker-1","event":"ack","attrs":{"why":"history row exists","step":"claim"}}`: StepClaim,
		`{"at":1,"pod":"worker-1","event":"requeue","attrs":{"why":"history row exists"}}`:            "",
		`{"at":1,"pod":"worker-1","event":"ack","attrs":{"why":"something a later worker says"}}`:     "",
	} {
		var e Event
		if err := json.Unmarshal([]byte(raw), &e); err != nil {
			t.Fatal(err)
		}
		if got := e.Str(KeyStep); got != want {
			t.Errorf("%s: step %q, want %q", raw, got, want)
		}
	}
}
