package reports

import (
	"fmt"
	"sort"
	"strings"
	"time"

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
		mid, _ := ev.Attrs["message_id"].(string)
		role := strings.SplitN(ev.Pod, "-", 2)[0]
		actor := map[string]string{"relay": "Relay", "worker": "Worker", "job": "Job", "cleanup": "Cleanup"}[role]
		if actor == "" {
			continue
		}
		mine := mid == focus || (mid == "" && idsContain(ev.Attrs["ids"], focusID)) || fmt.Sprint(ev.Attrs["outbox_id"]) == focusID
		switch ev.Name {
		case "job":
			if ev.Attrs["kind"] != nil && fmt.Sprint(ev.Attrs["inserted"]) != "0" {
				add(ev.At, "Job->>Outbox: insert-ignore %v (%v new)", ev.Attrs["kind"], ev.Attrs["inserted"])
			}
		case "claim":
			if role == "relay" && mine {
				add(ev.At, "%s->>Outbox: claim %v rows with a lease", ev.Pod, ev.Attrs["count"])
			} else if role == "worker" && mine {
				add(ev.At, "%s->>Inbox: INSERT SENDING", ev.Pod)
			}
		case "reclaim":
			add(ev.At, "Note over Outbox: lease passed: PUBLISHING → PENDING (CLAIM_EXPIRED)")
		case "publish":
			if mine {
				arrow := "->>"
				if ev.Attrs["outcome"] != "confirmed" {
					arrow = "-x"
				}
				add(ev.At, "%s%sRabbitMQ: publish %s (%v)", ev.Pod, arrow, focus, ev.Attrs["outcome"])
			}
		case "publish-failed":
			if mine {
				add(ev.At, "%s->>Outbox: PENDING, backoff (attempt %v)", ev.Pod, ev.Attrs["attempt"])
			}
		case "mark":
			add(ev.At, "%s->>Outbox: mark PUBLISHED (%v rows)", ev.Pod, ev.Attrs["count"])
		case "lost-lease":
			if mine {
				add(ev.At, "Note over %s: lease lost: writes 0 rows", ev.Pod)
			}
		case "outbox-final":
			if mine {
				add(ev.At, "%s->>Outbox: %v (%v)", ev.Pod, ev.Attrs["status"], ev.Attrs["reason"])
			}
		case "ad-deferred":
			if mine {
				add(ev.At, "%s->>Outbox: ad deferred to %v", ev.Pod, ev.Attrs["until"])
			}
		case "delivery":
			if mine {
				add(ev.At, "RabbitMQ->>%s: deliver %s (redelivered=%v)", ev.Pod, focus, ev.Attrs["redelivered"])
			}
		case "claim-lost":
			if mine {
				add(ev.At, "Inbox-->>%s: already claimed: do not send", ev.Pod)
			}
		case "claim-failed":
			if mine {
				add(ev.At, "%s-xInbox: claim response lost", ev.Pod)
			}
		case "vendor-call":
			if mine {
				arrow := "->>"
				if ev.Attrs["outcome"] != "SENT" {
					arrow = "-x"
				}
				add(ev.At, "%s%sVendor: send refkey=%s (%v %v)", ev.Pod, arrow, focus, ev.Attrs["outcome"], ev.Attrs["code"])
			}
		case "result", "result-failed":
			if mine {
				arrow := "->>"
				if ev.Name == "result-failed" {
					arrow = "-x"
				}
				add(ev.At, "%s%sInbox: %v", ev.Pod, arrow, ev.Attrs["status"])
			}
		case "release":
			if mine {
				add(ev.At, "%s->>Inbox: delete claim (definitely not sent)", ev.Pod)
			}
		case "ack", "requeue", "park":
			if mine {
				add(ev.At, "%s->>RabbitMQ: %s (%s)", ev.Pod, ev.Name, nonEmpty(ev.Attrs["why"], ev.Attrs["reason"]))
			}
		case "sending-timeout":
			if mine {
				add(ev.At, "Cleanup->>Inbox: SENDING too old → ERROR")
			}
		case "alert":
			if mine || mid == "" {
				add(ev.At, "%s->>Ops: alert %v", ev.Pod, ev.Attrs["kind"])
			}
		case "skip":
			if mine {
				add(ev.At, "Note over %s: skipped (%v)", ev.Pod, ev.Attrs["reason"])
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
		case f.Kind == "kill-point":
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
	case "job":
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
		mid, _ := ev.Attrs["message_id"].(string)
		if mid == "" {
			continue
		}
		switch ev.Name {
		case "claim-failed", "result-failed", "release", "park", "requeue", "sending-timeout":
			return mid
		case "vendor-call":
			if ev.Attrs["outcome"] != "SENT" {
				return mid
			}
		case "publish":
			if ev.Attrs["outcome"] != "confirmed" {
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
