package faults

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/outboxchaos/outboxchaos/history"
	"github.com/outboxchaos/outboxchaos/system/clock"
	"github.com/outboxchaos/outboxchaos/system/notification"
)

// Poison is a message no relay wrote, published straight to the main queue
// (a bad deploy, a hand-made message, another producer): what is wrong
// with it is one of Poisons. The worker must park it with its reason and
// an alert, and never call the vendor. It fired when a pod parked it.
type Poison struct {
	What string
}

// Poisons are the ways a message can be poison, each with the outbox id
// its payload names (none of the run's rows).
var Poisons = map[string]int64{
	"unknown-kind":     900001, // a notification kind no template has
	"missing-template": 900002, // a template code that does not exist
	"long-fallback":    900003, // an SMS fallback over 2,000 EUC-KR bytes
	"malformed":        900004, // a body that is not a payload
	"long-message-id":  900005, // a message_id over 100 characters
}

// PoisonNames lists Poisons' keys, sorted.
func PoisonNames() []string {
	return []string{"long-fallback", "long-message-id", "malformed", "missing-template", "unknown-kind"}
}

// Family is "poison".
func (p *Poison) Family() string { return KindPoison }

// Target is the message.
func (p *Poison) Target() string { return p.messageID() }

func (p *Poison) messageID() string {
	id := notification.MessageID(Poisons[p.What])
	if p.What == "long-message-id" {
		id += "-" + strings.Repeat("x", notification.MaxMessageIDLen)
	}
	return id
}

// body is the poison payload, as the relay would have published it.
func (p *Poison) body(now time.Time) []byte {
	if p.What == "malformed" {
		return []byte(`{"kind": "GRADE_RENEWAL", "phone":`)
	}
	id := Poisons[p.What]
	tpl, _ := notification.TemplateFor(notification.GradeRenewal)
	pl := notification.Payload{OutboxID: id, DedupKey: fmt.Sprintf("POISON:%d", id), Kind: notification.GradeRenewal,
		MemberID: 1, Phone: "01000000001", Template: tpl.Code, Variables: map[string]string{"name": "회원", "grade": "GOLD"},
		ScheduledDate: clock.Date(now).Format(time.DateOnly)}
	switch p.What {
	case "unknown-kind":
		pl.Kind, pl.Template = "UNKNOWN_KIND", ""
	case "missing-template":
		pl.Template = "NO_SUCH_TEMPLATE"
	case "long-fallback":
		pl.Fallback = strings.Repeat("가", 1001) // 2,002 EUC-KR bytes
	}
	b, _ := json.Marshal(pl)
	return b
}

// Inject publishes the message to the main queue.
func (p *Poison) Inject(ctx context.Context, w World) error {
	return w.Broker().Publish(ctx, p.messageID(), p.body(w.Now()))
}

// Momentary: the message is published as it is injected.
func (*Poison) Momentary() {}

// Recover does nothing: the message is parked, or still on its way.
func (p *Poison) Recover(context.Context, World) error { return nil }

// Fired reports whether a pod parked the message.
func (p *Poison) Fired(w World) (bool, string) {
	mid := p.messageID()
	for _, pod := range w.Pods() {
		for _, e := range pod.Events() {
			if e.Name == history.Park && e.Str(history.KeyMessageID) == mid {
				return true, pod.Name() + " parked it: " + e.Str(history.KeyReason)
			}
		}
	}
	return false, "not parked"
}

func (p *Poison) String() string { return "poison " + p.What }

func buildPoison(s Spec) (Fault, error) {
	if err := oneOf("poison", s.Poison, PoisonNames()); err != nil {
		return nil, err
	}
	return &Poison{What: s.Poison}, nil
}
