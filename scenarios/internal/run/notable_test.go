package run

import "testing"

// TestNotable: event lines are kept by their event name, not their text;
// other lines by the harness's words.
func TestNotable(t *testing.T) {
	t.Parallel()
	for line, want := range map[string]bool{
		"  +0.100s  relay-1   publish outcome [publish] message_id=notification-outbox-1 outbox_id=1":        true,
		"  +0.100s  worker-1  delivered [delivery] message_id=notification-outbox-1 redelivered=false":       false,
		"  +0.100s  worker-1  acked [ack] message_id=notification-outbox-1 step=peek why=x":                  true,
		"  +0.100s  worker-1  acked [ack] message_id=notification-outbox-1 step=sent why=history row exists": false,
		"  +0.100s  worker-1  a message that says lost [delivery] message_id=x":                              false,
		"  +0.100s  faults    inject down rabbitmq-relay":                                                    true,
		"  +0.100s  relay-1   KILLPOINT relay.after-claim hit 1":                                             true,
		"  +0.100s  relay-1   exited: signal: killed (code 137)":                                             true,
		"  +0.100s  worker-1  goroutine 1 [running]:":                                                        false,
	} {
		if got := Notable(line); got != want {
			t.Errorf("Notable(%q) = %v, want %v", line, got, want)
		}
	}
}
