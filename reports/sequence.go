package reports

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/outboxchaos/outboxchaos/faults"
	"github.com/outboxchaos/outboxchaos/history"
	"github.com/outboxchaos/outboxchaos/scenarios"
)

// maxSteps bounds a diagram.
const maxSteps = 40

type step struct {
	at   time.Duration
	line string
}

// Sequence draws a mermaid sequenceDiagram of one run, following the first
// message the fault touched (the first message_id a failure event names, else
// notification-outbox-1): kills as notes, fault windows shaded with rect,
// failed or unknown calls with -x.
func Sequence(r scenarios.Result) string {
	focus := focusMessage(r)
	focusID := strings.TrimPrefix(focus, "notification-outbox-")
	var steps []step
	add := func(at time.Duration, format string, args ...any) {
		steps = append(steps, step{at, fmt.Sprintf(format, args...)})
	}
	for _, ev := range r.Events {
		mid, _ := ev.Attrs[history.KeyMessageID].(string)
		role := strings.SplitN(ev.Pod, "-", 2)[0]
		actor := map[string]string{"relay": "Relay", "worker": "Worker", "job": "Job", "cleanup": "Cleanup"}[role]
		if actor == "" {
			continue
		}
		mine := mid == focus || (mid == "" && idsContain(ev.Attrs[history.KeyIDs], focusID)) || fmt.Sprint(ev.Attrs[history.KeyOutboxID]) == focusID
		switch ev.Name {
		case history.Job:
			if ev.Attrs[history.KeyKind] != nil && fmt.Sprint(ev.Attrs["inserted"]) != "0" {
				add(ev.At, "Job->>Outbox: insert-ignore %v (%v new)", ev.Attrs[history.KeyKind], ev.Attrs["inserted"])
			}
		case history.Claim:
			if role == "relay" && mine {
				add(ev.At, "%s->>Outbox: claim %v rows with a lease", ev.Pod, ev.Attrs[history.KeyCount])
			} else if role == "worker" && mine {
				add(ev.At, "%s->>Inbox: INSERT SENDING", ev.Pod)
			}
		case history.Reclaim:
			add(ev.At, "Note over Outbox: lease passed: PUBLISHING → PENDING (CLAIM_EXPIRED)")
		case history.Publish:
			if mine {
				arrow := "->>"
				if ev.Attrs[history.KeyOutcome] != history.OutcomeConfirmed {
					arrow = "-x"
				}
				add(ev.At, "%s%sRabbitMQ: publish %s (%v)", ev.Pod, arrow, focus, ev.Attrs[history.KeyOutcome])
			}
		case history.PublishFailed:
			if mine {
				add(ev.At, "%s->>Outbox: PENDING, backoff (attempt %v)", ev.Pod, ev.Attrs[history.KeyAttempt])
			}
		case history.Mark:
			add(ev.At, "%s->>Outbox: mark PUBLISHED (%v rows)", ev.Pod, ev.Attrs[history.KeyCount])
		case history.LostLease:
			if mine {
				add(ev.At, "Note over %s: lease lost: writes 0 rows", ev.Pod)
			}
		case history.OutboxFinal:
			if mine {
				add(ev.At, "%s->>Outbox: %v (%v)", ev.Pod, ev.Attrs[history.KeyStatus], ev.Attrs[history.KeyReason])
			}
		case history.AdDeferred:
			if mine {
				add(ev.At, "%s->>Outbox: ad deferred to %v", ev.Pod, ev.Attrs["until"])
			}
		case history.Delivery:
			if mine {
				add(ev.At, "RabbitMQ->>%s: deliver %s (redelivered=%v)", ev.Pod, focus, ev.Attrs[history.KeyRedelivered])
			}
		case history.ClaimLost:
			if mine {
				add(ev.At, "Inbox-->>%s: already claimed: do not send", ev.Pod)
			}
		case history.ClaimFailed:
			if mine {
				add(ev.At, "%s-xInbox: claim response lost", ev.Pod)
			}
		case history.VendorCall:
			if mine {
				arrow := "->>"
				if ev.Attrs[history.KeyOutcome] != "SENT" {
					arrow = "-x"
				}
				add(ev.At, "%s%sVendor: send refkey=%s (%v %v)", ev.Pod, arrow, focus, ev.Attrs[history.KeyOutcome], ev.Attrs["code"])
			}
		case history.Result, history.ResultFailed:
			if mine {
				arrow := "->>"
				if ev.Name == history.ResultFailed {
					arrow = "-x"
				}
				add(ev.At, "%s%sInbox: %v", ev.Pod, arrow, ev.Attrs[history.KeyStatus])
			}
		case history.Release:
			if mine {
				add(ev.At, "%s->>Inbox: delete claim (definitely not sent)", ev.Pod)
			}
		case history.Ack, history.Requeue, history.Park:
			if mine {
				add(ev.At, "%s->>RabbitMQ: %s (%s)", ev.Pod, ev.Name, nonEmpty(ev.Attrs[history.KeyWhy], ev.Attrs[history.KeyReason]))
			}
		case history.SendingTimeout:
			if mine {
				add(ev.At, "Cleanup->>Inbox: SENDING too old → ERROR")
			}
		case history.Alert:
			if mine || mid == "" {
				add(ev.At, "%s->>Ops: alert %v", ev.Pod, ev.Attrs[history.KeyKind])
			}
		case history.Skip:
			if mine {
				add(ev.At, "Note over %s: skipped (%v)", ev.Pod, ev.Attrs[history.KeyReason])
			}
		}
	}
	sort.SliceStable(steps, func(i, j int) bool { return steps[i].at < steps[j].at })
	var b strings.Builder
	b.WriteString("sequenceDiagram\n")
	for _, p := range []string{"Job", "Outbox", "Relay", "RabbitMQ", "Worker", "Inbox", "Vendor", "Cleanup", "Ops"} {
		fmt.Fprintf(&b, "    participant %s\n", p)
	}
	// Faults: kills as notes, windows as shaded rects around their steps.
	type window struct {
		start, end time.Duration
		label      string
	}
	// A network fault is a window: its steps are shaded with rect. Other
	// faults are notes at the moment they fired.
	for _, f := range r.Faults {
		switch {
		case f.Kind == faults.KindKillPoint:
			steps = append(steps, step{f.At, fmt.Sprintf("Note over %s: SIGKILL at %s", actorOf(f.Target), f.Detail)})
		case f.Start > 0:
			steps = append(steps,
				step{f.Start, fmt.Sprintf("rect rgb(255, 228, 225)\n    Note over Relay,Vendor: %s on %s (fired=%v)", f.Kind, f.Target, f.Fired)},
				step{f.At, "end"})
		default:
			steps = append(steps, step{f.At, fmt.Sprintf("Note over Relay,Vendor: %s %s (fired=%v)", f.Kind, f.Target, f.Fired)})
		}
	}
	sort.SliceStable(steps, func(i, j int) bool { return steps[i].at < steps[j].at })
	if len(steps) > maxSteps {
		// Keep the rect/end pairs balanced when truncating.
		open := 0
		kept := steps[:maxSteps-1]
		for _, s := range kept {
			if strings.HasPrefix(s.line, "rect ") {
				open++
			} else if s.line == "end" {
				open--
			}
		}
		steps = append(kept, step{0, "Note over Relay,Vendor: … (truncated)"})
		for ; open > 0; open-- {
			steps = append(steps, step{0, "end"})
		}
	}
	for _, s := range steps {
		line := s.line
		for _, pod := range []string{"relay", "worker", "cleanup", "job"} {
			line = replacePod(line, pod)
		}
		fmt.Fprintf(&b, "    %s\n", line)
	}
	return b.String()
}

// replacePod maps pod names (relay-1) to participants (Relay) in arrows.
func replacePod(line, role string) string {
	actor := actorOf(role)
	for i := 1; i <= 9; i++ {
		line = strings.ReplaceAll(line, fmt.Sprintf("%s-%d", role, i), actor)
	}
	return line
}

func actorOf(pod string) string {
	switch strings.SplitN(pod, "-", 2)[0] {
	case "relay":
		return "Relay"
	case "worker":
		return "Worker"
	case history.Job:
		return "Job"
	case "cleanup":
		return "Cleanup"
	}
	return "Relay"
}

func idsContain(v any, id string) bool {
	xs, ok := v.([]any)
	if !ok {
		return false
	}
	for _, x := range xs {
		if fmt.Sprint(x) == id {
			return true
		}
	}
	return false
}

// focusMessage picks the message the fault touched first.
func focusMessage(r scenarios.Result) string {
	for _, ev := range r.Events {
		mid, _ := ev.Attrs[history.KeyMessageID].(string)
		if mid == "" {
			continue
		}
		switch ev.Name {
		case history.ClaimFailed, history.ResultFailed, history.Release, history.Park, history.Requeue, history.SendingTimeout:
			return mid
		case history.VendorCall:
			if ev.Attrs[history.KeyOutcome] != "SENT" {
				return mid
			}
		case history.Publish:
			if ev.Attrs[history.KeyOutcome] != history.OutcomeConfirmed {
				return mid
			}
		}
	}
	return "notification-outbox-1"
}

// nonEmpty joins the non-empty values.
func nonEmpty(vs ...any) string {
	var parts []string
	for _, v := range vs {
		if v != nil && fmt.Sprint(v) != "" {
			parts = append(parts, fmt.Sprint(v))
		}
	}
	return strings.Join(parts, ", ")
}
