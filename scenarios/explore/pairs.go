package explore

import (
	"slices"
	"strings"
	"time"

	"github.com/outboxchaos/outboxchaos/checker"
	"github.com/outboxchaos/outboxchaos/fakevendor"
	"github.com/outboxchaos/outboxchaos/faults"
	"github.com/outboxchaos/outboxchaos/rig"
	"github.com/outboxchaos/outboxchaos/system/killpoint"
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
	// Refusable: the pair may instead be drawn as a refused window
	// (refusedWindow).
	Refusable bool
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
			{Kind: faults.KindLatency, Link: "rabbitmq-relay", Delay: faults.Duration(700 * time.Millisecond), Direction: string(rig.Downstream)},
			{Kind: faults.KindStall, Link: "rabbitmq-relay", Direction: string(rig.Downstream)},
			{Kind: faults.KindDown, Link: "rabbitmq-relay"},
			{Kind: faults.KindFailpoint, Point: killpoint.FailMisroute},
		},
		Refusable: true,
	},
	{
		// One relay held holding its claim while the other's lease passes
		// and it claims, publishes and marks the same rows.
		Name: "two relays on one batch", Role: "relay",
		Points: []string{killpoint.RelayAfterClaim, killpoint.RelayAfterPublish, killpoint.RelayAfterConfirm, killpoint.RelayBeforeMark}, Hits: 2,
		Shape: func(s *Schedule) { s.Relays = 2 },
		Faults: []faults.Spec{
			{Kind: faults.KindDown, Link: "postgres-relay"},
			{Kind: faults.KindLatency, Link: "rabbitmq-relay", Delay: faults.Duration(700 * time.Millisecond), Direction: string(rig.Downstream)},
			{Kind: faults.KindKill, Pod: "relay-2"},
		},
	},
	{
		// A worker held holding its claim while cleanup sweeps the row
		// past the sending timeout and a second worker gets the copy.
		Name: "a worker and cleanup on one row", Role: "worker",
		Points: []string{killpoint.WorkerAfterClaim, killpoint.WorkerAfterSend}, Hits: 2,
		Shape: func(s *Schedule) { s.Workers = 2 },
		Faults: []faults.Spec{
			{Kind: faults.KindDown, Link: "rabbitmq-worker"},
			{Kind: faults.KindDown, Link: "postgres-worker"},
			{Kind: faults.KindStall, Link: "vendor", Direction: string(rig.Downstream)},
		},
	},
	{
		// A worker held after its send while the row goes ERROR and the
		// reconciler looks it up, settles it or re-sends it.
		Name: "a worker and the reconciler on one row", Role: "worker",
		Points: []string{killpoint.WorkerAfterSend, killpoint.WorkerAfterClaim}, Hits: 2,
		Shape: func(s *Schedule) { s.Reconcile = "resend"; s.unknownOutcome() },
		Faults: []faults.Spec{
			{Kind: faults.KindDown, Link: "postgres-worker"},
			{Kind: faults.KindDown, Link: "vendor"},
			{Kind: faults.KindStall, Link: "vendor", Direction: string(rig.Downstream)},
		},
	},
	{
		// One reconciler held mid-settlement while the other settles or
		// re-sends the same row.
		Name: "two reconcilers", Role: "reconciler",
		Points: []string{killpoint.ReconcileAfterLookup, killpoint.ReconcileBeforeSettle, killpoint.ReconcileAfterResendClaim, killpoint.ReconcileAfterResend}, Hits: 2,
		Shape: func(s *Schedule) { s.Reconcile, s.Reconcilers = "resend", 2; s.unknownOutcome() },
		Faults: []faults.Spec{
			{Kind: faults.KindDown, Link: "vendor"},
			{Kind: faults.KindLatency, Link: "vendor", Delay: faults.Duration(700 * time.Millisecond), Direction: string(rig.Downstream)},
			{Kind: faults.KindKill, Pod: "reconciler-2"},
		},
	},
}

// RefusedPair names the held pair of two publish windows drawn as a
// refused window: window A's answers held, the next window sent meanwhile.
const RefusedPair = "a refused publish window and the next"

// refusal is a refused window's draw: window A (1-based) of a draining
// relay, which of its messages the broker refuses, which of window B's
// (the next) goes where nothing is bound, and how long the broker's
// answers take to reach the relay.
type refusal struct {
	window, refused, misrouted int
	delay                      time.Duration
}

// refusedWindow holds window A's answers instead of a pod: the broker's
// answers to the relay are delayed (less than the confirm timeout) for the
// whole run, so window B is sent on A's channel before A's nack is read;
// the broker refuses one message of A (as a full queue does) and cannot
// route one of B's. A's nack replaces the channel while B is in flight: B's
// return must still be found.
func (s *Schedule) refusedWindow(w refusal) {
	// One misrouted publish at a time: the pair's, in window B.
	s.Faults = slices.DeleteFunc(s.Faults, func(t Timed) bool {
		return t.Kind == faults.KindFailpoint && t.Point == killpoint.FailMisroute
	})
	s.Faults = append(s.Faults,
		Timed{Spec: faults.Spec{Kind: faults.KindLatency, Link: "rabbitmq-relay", Delay: faults.Duration(w.delay), Direction: string(rig.Downstream)},
			When: WhenFirst, Pair: RefusedPair},
		Timed{Spec: faults.Spec{Kind: faults.KindFailpoint, Point: killpoint.FailRefuse, Hit: drainBatch*(w.window-1) + 1 + w.refused},
			When: WhenArmed, Role: "relay", Pair: RefusedPair},
		Timed{Spec: faults.Spec{Kind: faults.KindFailpoint, Point: killpoint.FailMisroute, Hit: drainBatch*w.window + 1 + w.misrouted},
			When: WhenArmed, Role: "relay", Pair: RefusedPair})
}

// unknownOutcome gives the reconcilers a row to work: the vendor takes
// message 1's first send and answers 500 (ERROR, its outcome unknown).
func (s *Schedule) unknownOutcome() {
	s.Faults = append(s.Faults, Timed{Spec: faults.Spec{Kind: faults.KindVendor, Mode: string(fakevendor.Accept5xx), Msg: 1, Times: 1}, When: WhenFirst})
}

// HeldPairs names the pairs a schedule may hold, in draw order.
// A refusable pair is followed by its refused-window variant.
func HeldPairs() []string {
	var out []string
	for _, p := range heldPairs {
		out = append(out, p.Name)
		if p.Refusable {
			out = append(out, RefusedPair)
		}
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
	// Newer choices, drawn after the others: a refused window instead.
	refused := d.Int("pair refused window", 0, 1) == 1
	w := refusal{window: hit, refused: d.Int("pair refused message", 0, drainBatch-1),
		misrouted: d.Int("pair misrouted message", 0, drainBatch-1),
		delay:     time.Duration(d.Int("pair answer delay ms", 100, 450)) * time.Millisecond}
	if !s.mayFreeze() {
		return
	}
	p.Shape(s)
	if p.Refusable && refused {
		s.refusedWindow(w)
		return
	}
	var armed []faults.Spec
	for _, f := range held {
		if f.Kind == faults.KindFailpoint {
			// A failpoint is armed in the held pod, at a hit near the
			// freeze: a publish of the window it resumes with, or of the
			// one before.
			armed = append(armed, faults.Spec{Kind: faults.KindFailpoint, Point: f.Point, Hit: max(1, 2*hit-1+misrouteOffset)})
		}
	}
	held = slices.DeleteFunc(held, func(f faults.Spec) bool { return f.Kind == faults.KindFailpoint })
	s.Faults = append(s.Faults, Timed{Spec: faults.Spec{Kind: faults.KindPausePoint, Point: point, Hit: hit}, When: WhenArmed, Role: p.Role,
		Boundary: b.Name, Band: band, Pair: p.Name})
	for _, f := range armed {
		s.Faults = append(s.Faults, Timed{Spec: f, When: WhenArmed, Role: p.Role, Pair: p.Name})
	}
	s.Faults = append(s.Faults, Timed{Spec: faults.Spec{Kind: faults.KindResume, Pod: p.Role + "-1"}, When: WhenPaused,
		For: faults.Duration(dur), Boundary: b.Name, Band: band, Held: held, Overhang: faults.Duration(overhang), Pair: p.Name})
}

// AddHeld counts a judged schedule's held pair, if it drew one: drawn,
// held (its pod froze at the pair's point, by the fault ledger), and, of
// a held one, each family of the faults on its partner that fired.
func (c *Coverage) AddHeld(s Schedule, recs []checker.FaultRecord) {
	c.addStale(s, recs)
	if slices.ContainsFunc(s.Faults, func(t Timed) bool { return t.Pair == RefusedPair }) {
		c.addRefused(recs)
		return
	}
	var pause, resume *Timed
	for i := range s.Faults {
		t := &s.Faults[i]
		switch {
		case t.Pair == "":
		case t.Kind == faults.KindPausePoint:
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
		return firedAt(r, faults.KindPausePoint, pause.Point)
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
		if t.Pair == pause.Pair && t.Kind == faults.KindFailpoint && slices.ContainsFunc(recs, func(r checker.FaultRecord) bool {
			return firedAt(r, faults.KindFailpoint, t.Point)
		}) {
			fired[faults.KindFailpoint] = true
		}
	}
	for f := range fired {
		c.Held[pause.Pair+HeldWith+f]++
	}
}

// addRefused counts a refused window: drawn; held once the broker refused
// window A's message (its nack held by the delayed answers); with a
// failpoint once window B's message went where nothing is bound.
func (c *Coverage) addRefused(recs []checker.FaultRecord) {
	if c.Held == nil {
		c.Held = map[string]int{}
	}
	c.Held[RefusedPair+HeldDrawn]++
	fired := func(point string) bool {
		return slices.ContainsFunc(recs, func(r checker.FaultRecord) bool {
			return firedAt(r, faults.KindFailpoint, point)
		})
	}
	if !fired(killpoint.FailRefuse) {
		return
	}
	c.Held[RefusedPair+HeldFroze]++
	if fired(killpoint.FailMisroute) {
		c.Held[RefusedPair+HeldWith+faults.KindFailpoint]++
	}
}

// firedAt reports whether r is a fault of kind at point that fired.
func firedAt(r checker.FaultRecord, kind, point string) bool {
	return r.Kind == kind && r.Fired && strings.Contains(r.Detail, point)
}

// mayFreeze reports whether a held pair or a stale actor may freeze a pod
// in s: a schedule freezes at most one pod, and a swarm schedule that left
// pauses out freezes none.
func (s *Schedule) mayFreeze() bool {
	return !slices.ContainsFunc(s.Faults, func(t Timed) bool { return t.Kind == faults.KindPausePoint }) &&
		(s.Swarm == nil || slices.Contains(s.Swarm, faults.KindPausePoint))
}

// The keys of Coverage.Held after a pair's name: drawn, held, and held
// with a fault of a family on the partner fired.
const (
	HeldDrawn = " | drawn"
	HeldFroze = " | held"
	HeldWith  = " | with "
)
