package main

import (
	"strings"
	"testing"

	"github.com/outboxchaos/outboxchaos/history"
	"github.com/outboxchaos/outboxchaos/scenarios"
)

// TestPrintResult_MarksAndFolds: the printed timeline marks the copy the
// inbox absorbed, folds the clock's lines of one wait into one, and with
// -v prints every line as the run wrote it.
func TestPrintResult_MarksAndFolds(t *testing.T) {
	t.Parallel()
	r := scenarios.Result{
		Timeline: "   +0.100s  harness   scenario x: schema s\n" +
			"   +0.200s  harness   clock not jumped: messages queued\n" +
			"   +0.300s  worker-1  acked [ack] message_id=notification-outbox-8 why=history row exists step=peek\n" +
			"   +0.400s  harness   clock not jumped: outbox row 8 is being published\n" +
			"   +0.500s  worker-1  delivered [delivery] message_id=notification-outbox-8\n",
		Events: []history.Event{
			{Pod: "worker-1", Name: history.Ack, Attrs: map[string]any{history.KeyMessageID: "notification-outbox-8", history.KeyStep: history.StepPeek}},
			{Pod: "worker-1", Name: history.Delivery, Attrs: map[string]any{history.KeyMessageID: "notification-outbox-8"}},
		},
	}
	var short, all strings.Builder
	printResult(&short, r, false)
	printResult(&all, r, true)
	want := "--- timeline\n" +
		"   +0.100s  harness   scenario x: schema s\n" +
		"   +0.200s  harness   clock: not jumped 2× (messages queued, outbox row 8 is being published) until +0.400s\n" +
		scenarios.Marker + "  +0.300s  worker-1  acked [ack] message_id=notification-outbox-8 why=history row exists step=peek\n" +
		"--- faults\n"
	if !strings.HasPrefix(short.String(), want) {
		t.Errorf("printed:\n%s\nwant it to begin:\n%s", short.String(), want)
	}
	if !strings.Contains(all.String(), "clock not jumped: outbox row 8") || !strings.Contains(all.String(), "[delivery]") ||
		!strings.Contains(all.String(), scenarios.Marker+"  +0.300s  worker-1") {
		t.Errorf("-v printed:\n%s", all.String())
	}
}
