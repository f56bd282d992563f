package scenarios

import (
	"slices"
	"strings"
	"time"

	"github.com/outboxchaos/outboxchaos/checker"
	"github.com/outboxchaos/outboxchaos/fakevendor"
	"github.com/outboxchaos/outboxchaos/faults"
	"github.com/outboxchaos/outboxchaos/system/killpoint"
	"github.com/outboxchaos/outboxchaos/world"
)

// heldPair is a pair of units of work the pipeline runs at once: one is
// held at a point of its own (its pod frozen at a pause-point) while a
// fault hits the other, and released after, so the fault lands in the
// pipeline's own window, not at a time.
type heldPair struct {
	Name string
	// Role is the role whose first pod is held, at one of Points, hit 1
	// to Hits.
	Role   string
	Points []string
	Hits   int
	// Shape gives the schedule the topology the pair needs (a second
	// relay, a draining relay, reconcilers).
	Shape func(s *Schedule)
	// Faults are what may hit the other unit while the first is held.
	Faults []faults.Spec
}

// heldPairs are the pairs of concurrent units of work the pipeline has.
var heldPairs = []heldPair{
	{
		// Window B held before its publish, or after it, while window A's
		// answers are held or cut; a publish the broker cannot route and
		// a bounded main queue make both windows' outcomes differ.
		Name: "two publish windows of one drain", Role: "relay",
		Points: []string{killpoint.RelayBeforePublish, killpoint.RelayAfterPublish}, Hits: 3,
		Shape: func(s *Schedule) {
			s.Drain, s.Relays = true, 1
			s.Config = mergeConfig(s.Config, map[string]string{"batch-size": "2", "relay-drain-claimers": "1"})
		},
		Faults: []faults.Spec{
			{Kind: "latency", Link: "rabbitmq-relay", Delay: faults.Duration(700 * time.Millisecond), Direction: string(world.Downstream)},
			{Kind: "stall", Link: "rabbitmq-relay", Direction: string(world.Downstream)},
			{Kind: "down", Link: "rabbitmq-relay"},
			{Kind: "failpoint", Point: killpoint.FailMisroute},
		},
	},
	{
		// One relay held holding its claim while the other's lease passes
		// and it claims, publishes and marks the same rows.
		Name: "two relays on one batch", Role: "relay",
		Points: []string{killpoint.RelayAfterClaim, killpoint.RelayAfterPublish, killpoint.RelayAfterConfirm, killpoint.RelayBeforeMark}, Hits: 2,
		Shape: func(s *Schedule) { s.Relays = 2 },
		Faults: []faults.Spec{
			{Kind: "down", Link: "postgres-relay"},
			{Kind: "latency", Link: "rabbitmq-relay", Delay: faults.Duration(700 * time.Millisecond), Direction: string(world.Downstream)},
			{Kind: "kill", Pod: "relay-2"},
		},
	},
	{
		// A worker held holding its claim while cleanup sweeps the row
		// past the sending timeout and a second worker gets the copy.
		Name: "a worker and cleanup on one row", Role: "worker",
		Points: []string{killpoint.WorkerAfterClaim, killpoint.WorkerAfterSend}, Hits: 2,
		Shape: func(s *Schedule) { s.Workers = 2 },
		Faults: []faults.Spec{
			{Kind: "down", Link: "rabbitmq-worker"},
			{Kind: "down", Link: "postgres-worker"},
			{Kind: "stall", Link: "vendor", Direction: string(world.Downstream)},
		},
	},
	{
		// A worker held after its send while the row goes ERROR and the
		// reconciler looks it up, settles it or re-sends it.
		Name: "a worker and the reconciler on one row", Role: "worker",
		Points: []string{killpoint.WorkerAfterSend, killpoint.WorkerAfterClaim}, Hits: 2,
		Shape: func(s *Schedule) { s.Reconcile = "resend"; s.unknownOutcome() },
		Faults: []faults.Spec{
			{Kind: "down", Link: "postgres-worker"},
			{Kind: "down", Link: "vendor"},
			{Kind: "stall", Link: "vendor", Direction: string(world.Downstream)},
		},
	},
	{
		// One reconciler held mid-settlement while the other settles or
		// re-sends the same row.
		Name: "two reconcilers", Role: "reconciler",
		Points: []string{killpoint.ReconcileAfterLookup, killpoint.ReconcileBeforeSettle, killpoint.ReconcileAfterResendClaim, killpoint.ReconcileAfterResend}, Hits: 2,
		Shape: func(s *Schedule) { s.Reconcile, s.Reconcilers = "resend", 2; s.unknownOutcome() },
		Faults: []faults.Spec{
			{Kind: "down", Link: "vendor"},
			{Kind: "latency", Link: "vendor", Delay: faults.Duration(700 * time.Millisecond), Direction: string(world.Downstream)},
			{Kind: "kill", Pod: "reconciler-2"},
		},
	},
}

// unknownOutcome gives the reconcilers a row to work: the vendor takes
// message 1's first send and answers 500 (ERROR, its outcome unknown).
func (s *Schedule) unknownOutcome() {
	s.Faults = append(s.Faults, Timed{Spec: faults.Spec{Kind: "vendor", Mode: string(fakevendor.Accept5xx), Msg: 1, Times: 1}, When: WhenFirst})
}

// HeldPairs names the pairs a schedule may hold, in draw order.
func HeldPairs() []string {
	out := make([]string, len(heldPairs))
	for i, p := range heldPairs {
		out[i] = p.Name
	}
	return out
}

// heldPair draws, after every older choice so saved failfiles keep their
// schedules, one pair of concurrent units: the first pod of the pair's
// role frozen at a point of its own, one or two faults on the other unit
// while it is frozen, for a time drawn around a deadline, then resumed
// with the faults still in place for up to a second.
// A schedule holds at most one pod: when a pause is drawn already, or a
// swarm schedule left pauses out, the pair is left out (its draws still
// taken).
func (s *Schedule) heldPair(d Draw) {
	if d.Int("held pair", 0, 2) != 0 {
		return
	}
	p := heldPairs[d.Int("pair", 0, len(heldPairs)-1)]
	point := p.Points[d.Int("pair point", 0, len(p.Points)-1)]
	hit := d.Int("pair hit", 1, p.Hits)
	misrouteOffset := d.Int("pair failpoint offset", -1, 2)
	var held []faults.Spec
	for range d.Int("pair faults", 1, 2) {
		if f := p.Faults[d.Int("pair fault", 0, len(p.Faults)-1)]; !slices.Contains(held, f) {
			held = append(held, f)
		}
	}
	dur, b, band := drawAround(d)
	// The faults outlast the hold by up to a second: the resumed pod's
	// first steps (window B's publish, a stale write) meet them too.
	overhang := time.Duration(d.Int("pair overhang ms", 0, 1000)) * time.Millisecond
	for _, t := range s.Faults {
		if t.Kind == "pause-point" {
			return
		}
	}
	if s.Swarm != nil && !slices.Contains(s.Swarm, "pause-point") {
		return
	}
	p.Shape(s)
	var armed []faults.Spec
	for _, f := range held {
		if f.Kind == "failpoint" {
			// A failpoint is armed in the held pod, at a hit near the
			// freeze: a publish of the window it resumes with, or of the
			// one before.
			armed = append(armed, faults.Spec{Kind: "failpoint", Point: f.Point, Hit: max(1, 2*hit-1+misrouteOffset)})
		}
	}
	held = slices.DeleteFunc(held, func(f faults.Spec) bool { return f.Kind == "failpoint" })
	s.Faults = append(s.Faults, Timed{Spec: faults.Spec{Kind: "pause-point", Point: point, Hit: hit}, When: WhenArmed, Role: p.Role,
		Boundary: b.Name, Band: band, Pair: p.Name})
	for _, f := range armed {
		s.Faults = append(s.Faults, Timed{Spec: f, When: WhenArmed, Role: p.Role, Pair: p.Name})
	}
	s.Faults = append(s.Faults, Timed{Spec: faults.Spec{Kind: "resume", Pod: p.Role + "-1"}, When: WhenPaused,
		For: faults.Duration(dur), Boundary: b.Name, Band: band, Held: held, Overhang: faults.Duration(overhang), Pair: p.Name})
}

// AddHeld counts a judged schedule's held pair, if it drew one: drawn,
// held (its pod froze at the pair's point, by the fault ledger), and, of
// a held one, each family of the faults on its partner that fired.
func (c *Coverage) AddHeld(s Schedule, recs []checker.FaultRecord) {
	var pause, resume *Timed
	for i := range s.Faults {
		t := &s.Faults[i]
		switch {
		case t.Pair == "":
		case t.Kind == "pause-point":
			pause = t
		case t.When == WhenPaused:
			resume = t
		}
	}
	if pause == nil || resume == nil {
		return
	}
	if c.Held == nil {
		c.Held = map[string]int{}
	}
	c.Held[pause.Pair+HeldDrawn]++
	froze := slices.ContainsFunc(recs, func(r checker.FaultRecord) bool {
		return r.Kind == "pause-point" && r.Fired && strings.Contains(r.Detail, pause.Point)
	})
	if !froze {
		return
	}
	c.Held[pause.Pair+HeldFroze]++
	fired := map[string]bool{}
	for _, h := range resume.Held {
		for _, r := range recs {
			if r.Kind == h.Kind && r.Fired && (r.Target == h.Link || r.Target == h.Pod) {
				fired[h.Kind] = true
			}
		}
	}
	for _, t := range s.Faults {
		if t.Pair == pause.Pair && t.Kind == "failpoint" && slices.ContainsFunc(recs, func(r checker.FaultRecord) bool {
			return r.Kind == "failpoint" && r.Fired && strings.Contains(r.Detail, t.Point)
		}) {
			fired["failpoint"] = true
		}
	}
	for f := range fired {
		c.Held[pause.Pair+HeldWith+f]++
	}
}

// The keys of Coverage.Held after a pair's name: drawn, held, and held
// with a fault of a family on the partner fired.
const (
	HeldDrawn = " | drawn"
	HeldFroze = " | held"
	HeldWith  = " | with "
)
