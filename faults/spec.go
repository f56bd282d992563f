package faults

import (
	"fmt"
	"sort"
	"strings"

	"github.com/outboxchaos/outboxchaos/fakevendor"
	"github.com/outboxchaos/outboxchaos/rig"
	"github.com/outboxchaos/outboxchaos/system/killpoint"
	"github.com/outboxchaos/outboxchaos/system/notification"
)

// Spec is a fault written as data (a scenario's JSON): its kind and the
// parameters that kind reads. Build turns it into a Fault.
//
//	{"kind": "kill-point", "point": "relay.after-claim"}
//	{"kind": "latency", "link": "rabbitmq-relay", "delay": "1.5s"}
//	{"kind": "vendor", "mode": "accept-hang", "msg": 1}
type Spec struct {
	Kind      string   `json:"kind"`
	Point     string   `json:"point,omitempty"`     // kill-point, failpoint: the point's name
	Hit       int      `json:"hit,omitempty"`       // kill-point, failpoint: on the Nth hit (default 1)
	Link      string   `json:"link,omitempty"`      // down, latency, stall: the link's name
	Direction string   `json:"direction,omitempty"` // latency, stall: upstream or downstream
	Delay     Duration `json:"delay,omitempty"`     // latency
	Mode      string   `json:"mode,omitempty"`      // vendor: the fake vendor's mode
	Msg       int64    `json:"msg,omitempty"`       // vendor, replay-parked: the outbox id
	Times     int      `json:"times,omitempty"`     // vendor: how often (0 = every time)
	By        Duration `json:"by,omitempty"`        // clock: the pod's clock runs this far ahead
	At        string   `json:"at,omitempty"`        // clock: the pod's clock starts at "hh:mm" or "+1d hh:mm"
	Pod       string   `json:"pod,omitempty"`       // sigterm: the pod
	Rows      int      `json:"rows,omitempty"`      // hold-rows: how many PENDING rows
	Poison    string   `json:"poison,omitempty"`    // poison: what is wrong with the message
	Member    int64    `json:"member,omitempty"`    // withdraw-consent: the member id
	Node      string   `json:"node,omitempty"`      // crash, restart, freeze: the container node
	Table     string   `json:"table,omitempty"`     // hold-table: outbox or inbox
	// Deployment is the role whose pods a rolling-restart replaces.
	Deployment string `json:"deployment,omitempty"`
	// Weather is what share of sends a vendor-weather answers with a fault.
	Weather *fakevendor.Weather `json:"weather,omitempty"`
}

// Kinds of fault: a Spec's kind, and the Family of the fault it builds.
const (
	KindKillPoint       = "kill-point"
	KindFailpoint       = "failpoint"
	KindPausePoint      = "pause-point"
	KindResume          = "resume"
	KindCrashPoint      = "crash-point"
	KindClock           = "clock"
	KindVendor          = "vendor"
	KindDown            = "down"
	KindLatency         = "latency"
	KindStall           = "stall"
	KindSigterm         = "sigterm"
	KindUnbind          = "unbind"
	KindReplayParked    = "replay-parked"
	KindHoldRows        = "hold-rows"
	KindHoldMigration   = "hold-migration"
	KindWithdrawConsent = "withdraw-consent"
	KindHoldTable       = "hold-table"
	KindHoldInboxRow    = "hold-inbox-row"
	KindCrash           = "crash"
	KindRestart         = "restart"
	KindFreeze          = "freeze"
	KindLeaderLoss      = "leader-loss"
	KindKill            = "kill"
	KindRollingRestart  = "rolling-restart"
	KindPoison          = "poison"
)

// builders maps each kind to its constructor and a one-line description.
var builders = map[string]struct {
	doc   string
	build func(Spec) (Fault, error)
}{
	KindKillPoint:       {"SIGKILL a pod at a named kill-point (point, hit)", buildKillpoint},
	KindFailpoint:       {"make a named step fail in a pod (point, hit)", buildFailpoint},
	KindPausePoint:      {"freeze a pod (SIGSTOP) at a named kill-point until resumed (point, hit)", buildPausepoint},
	KindResume:          {"continue a pod frozen at its pause-point (pod)", buildResume},
	KindCrashPoint:      {"SIGKILL a pod at an automatic crash point, \"<kind>:<label>:<before|after>\" (point, hit)", buildCrashPoint},
	KindClock:           {"start a pod's virtual clock elsewhere (by, or at \"hh:mm\" / \"+1d hh:mm\")", buildClock},
	KindVendor:          {"a fake-vendor fault mode for one message (mode, msg, times)", buildVendor},
	KindDown:            {"a link refuses connections and cuts the open ones (link)", buildDown},
	KindLatency:         {"a link delays every byte (link, direction, delay)", buildLatency},
	KindStall:           {"a link passes nothing until recovered (link, direction)", buildStall},
	KindSigterm:         {"ask a pod to stop (pod)", buildSigterm},
	KindUnbind:          {"the operator unbinds the main queue (rebinds on recover)", buildUnbind},
	KindReplayParked:    {"the operator replays a parked message to the main queue (msg)", buildReplay},
	KindHoldRows:        {"a transaction row-locks the first PENDING outbox rows (rows)", buildHoldRows},
	KindHoldMigration:   {"a migration is held half-done under the migration lock", buildHoldMigration},
	KindWithdrawConsent: {"a member withdraws SMS consent mid-run (member)", buildWithdrawConsent},
	KindHoldTable:       {"a transaction holds an EXCLUSIVE lock on a table: its writes wait (table: outbox, inbox)", buildHoldTable},
	KindHoldInboxRow:    {"a transaction row-locks a message's inbox row: its result write waits (msg)", buildHoldInboxRow},
	KindCrash:           {"SIGKILL an infrastructure node and start it on recover (node: postgres, rabbitmq, rabbitmq-N)", buildCrash},
	KindRestart:         {"stop an infrastructure node gracefully and start it on recover (node)", buildRestart},
	KindFreeze:          {"pause an infrastructure node (docker pause) and thaw it on recover (node)", buildFreeze},
	KindLeaderLoss:      {"SIGKILL the node leading the main quorum queue; it returns on recover", buildLeaderLoss},
	KindKill:            {"SIGKILL a pod (pod)", buildKill},
	KindRollingRestart:  {"a deployment's rolling restart: each pod of the role gets a successor, then SIGTERM (deployment)", buildRollingRestart},
	KindVendorWeather:   {"a share of every send the fake vendor gets times out, fails or is throttled, drawn per send from a seed (weather)", buildVendorWeather},
	KindPoison:          {"a message no relay wrote, published to the main queue (poison: unknown-kind, missing-template, long-fallback, malformed, long-message-id)", buildPoison},
}

// Kinds lists every fault kind with its description, sorted by kind.
func Kinds() []string {
	var out []string
	for k, b := range builders {
		out = append(out, k+": "+b.doc)
	}
	sort.Strings(out)
	return out
}

// Build turns the spec into a fault, or says clearly what is wrong with it.
func (s Spec) Build() (Fault, error) {
	b, ok := builders[s.Kind]
	if !ok {
		var kinds []string
		for k := range builders {
			kinds = append(kinds, k)
		}
		sort.Strings(kinds)
		return nil, fmt.Errorf("unknown fault kind %q (known: %s)", s.Kind, strings.Join(kinds, ", "))
	}
	f, err := b.build(s)
	if err != nil {
		return nil, fmt.Errorf("fault %s: %w", s.Kind, err)
	}
	return f, nil
}

func oneOf(what, got string, valid []string) error {
	for _, v := range valid {
		if got == v {
			return nil
		}
	}
	return fmt.Errorf("unknown %s %q (known: %s)", what, got, strings.Join(valid, ", "))
}

func hitOf(s Spec) (int, error) {
	if s.Hit < 0 {
		return 0, fmt.Errorf("hit %d: must be >= 1", s.Hit)
	}
	return max(s.Hit, 1), nil
}

func buildKillpoint(s Spec) (Fault, error) {
	if err := oneOf("kill-point", s.Point, killpoint.Names); err != nil {
		return nil, err
	}
	hit, err := hitOf(s)
	return &Killpoint{Point: s.Point, Hit: hit}, err
}

func buildFailpoint(s Spec) (Fault, error) {
	if err := oneOf("failpoint", s.Point, killpoint.FailNames); err != nil {
		return nil, err
	}
	hit, err := hitOf(s)
	return &Failpoint{Point: s.Point, Hit: hit}, err
}

func buildClock(s Spec) (Fault, error) {
	if (s.By == 0) == (s.At == "") {
		return nil, fmt.Errorf("set exactly one of by and at")
	}
	c := &ClockStep{By: s.By.D(), At: s.At}
	if s.At != "" {
		if _, _, _, err := parseAt(s.At); err != nil {
			return nil, err
		}
	}
	return c, nil
}

func buildVendor(s Spec) (Fault, error) {
	r := fakevendor.Rule{Mode: fakevendor.Mode(s.Mode), Times: s.Times}
	if r.Mode != fakevendor.TokenFail {
		if s.Msg <= 0 {
			return nil, fmt.Errorf("mode %s needs msg (the outbox id)", s.Mode)
		}
		r.RefKey = notification.MessageID(s.Msg)
	}
	if err := r.Validate(); err != nil {
		return nil, err
	}
	return &VendorRule{Rule: r}, nil
}

func linkOf(s Spec) error {
	if s.Link == "" {
		return fmt.Errorf("needs link (one of %s)", strings.Join(LinkNames, ", "))
	}
	return oneOf("link", s.Link, LinkNames)
}

func directionOf(s Spec) (rig.Direction, error) {
	d := rig.Direction(s.Direction)
	if d == "" {
		d = rig.Downstream
	}
	return d, d.Validate()
}

func buildDown(s Spec) (Fault, error) { return &LinkDown{Link: s.Link}, linkOf(s) }

func buildLatency(s Spec) (Fault, error) {
	if err := linkOf(s); err != nil {
		return nil, err
	}
	if s.Delay <= 0 {
		return nil, fmt.Errorf("needs a positive delay")
	}
	d, err := directionOf(s)
	return &LinkLatency{Link: s.Link, Direction: d, Delay: s.Delay.D()}, err
}

func buildStall(s Spec) (Fault, error) {
	if err := linkOf(s); err != nil {
		return nil, err
	}
	d, err := directionOf(s)
	return &LinkStall{Link: s.Link, Direction: d}, err
}

func buildSigterm(s Spec) (Fault, error) {
	if s.Pod == "" {
		return nil, fmt.Errorf("needs pod (e.g. worker-1)")
	}
	return &Sigterm{Pod: s.Pod}, nil
}

func buildUnbind(Spec) (Fault, error) { return &Unbind{}, nil }

func buildReplay(s Spec) (Fault, error) {
	if s.Msg <= 0 {
		return nil, fmt.Errorf("needs msg (the outbox id)")
	}
	return &ReplayParked{Msg: s.Msg}, nil
}

func buildHoldRows(s Spec) (Fault, error) {
	if s.Rows <= 0 {
		return nil, fmt.Errorf("needs rows >= 1")
	}
	return &HoldRows{Rows: s.Rows}, nil
}

func buildHoldMigration(Spec) (Fault, error) { return &HoldMigration{}, nil }

func buildHoldTable(s Spec) (Fault, error) {
	if err := oneOf("table", s.Table, []string{"outbox", "inbox"}); err != nil {
		return nil, err
	}
	return &HoldTable{Table: s.Table}, nil
}

func buildHoldInboxRow(s Spec) (Fault, error) {
	if s.Msg <= 0 {
		return nil, fmt.Errorf("needs msg (the outbox id)")
	}
	return &HoldInboxRow{Msg: s.Msg}, nil
}

func nodeOf(s Spec) error {
	if s.Node == "" {
		return fmt.Errorf("needs node (one of %s)", strings.Join(NodeNames, ", "))
	}
	return oneOf("node", s.Node, NodeNames)
}

func buildCrash(s Spec) (Fault, error)   { return &NodeCrash{Node: s.Node}, nodeOf(s) }
func buildRestart(s Spec) (Fault, error) { return &NodeRestart{Node: s.Node}, nodeOf(s) }
func buildFreeze(s Spec) (Fault, error)  { return &NodeFreeze{Node: s.Node}, nodeOf(s) }

func buildLeaderLoss(Spec) (Fault, error) { return &LeaderLoss{}, nil }

// LinkNames are the links a run may have: every run one to Postgres, one
// to RabbitMQ per role, one to the vendor; postgres-relay,
// postgres-worker and postgres-job are the relays', the workers' and the
// batch job's own hops in front of postgres (cutting postgres still cuts
// them too). nats-relay and
// nats-worker exist only in a run whose relay under test uses JetStream:
// the relays' and the peer's consumer's links to the run's nats-server.
var LinkNames = []string{"postgres", "rabbitmq-relay", "rabbitmq-worker", "vendor", "postgres-relay", "postgres-worker", "nats-relay", "nats-worker", "postgres-job"}
