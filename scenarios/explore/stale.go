package explore

import (
	"slices"
	"time"

	"github.com/outboxchaos/outboxchaos/checker"
	"github.com/outboxchaos/outboxchaos/faults"
	"github.com/outboxchaos/outboxchaos/history"
	"github.com/outboxchaos/outboxchaos/scenarios/scenario"
	"github.com/outboxchaos/outboxchaos/system/killpoint"
)

// staleActor is an actor frozen holding a row and resumed only once the
// others moved that row to a later status: it wakes up stale, its next
// write aimed at a row that is no longer where it left it.
type staleActor struct {
	Name string
	// Role is the role whose first pod freezes, at one of Points, hit 1
	// to 2.
	Role   string
	Points []string
	// Moved: the others moved the row (counted from the freeze).
	Moved scenario.Cond
	// Shape gives the schedule the actors that move the row.
	Shape func(s *Schedule)
}

// fresh is an event of name logged by a pod of pod (a "role-" prefix
// names every pod of the role) since the condition was first looked at.
func fresh(name, pod string) scenario.Cond {
	return scenario.Cond{Event: &scenario.EventCond{Name: name, Pod: pod, Fresh: true}}
}

// staleActors are the actors that can be left behind, each with the moves
// the others make while it is frozen.
var staleActors = []staleActor{
	{
		Name: "a worker after cleanup turned its row ERROR", Role: "worker",
		Points: []string{killpoint.WorkerAfterClaim, killpoint.WorkerAfterSend},
		Moved:  fresh(history.SendingTimeout, "cleanup-"),
		Shape:  func(*Schedule) {},
	},
	{
		Name: "a worker after the reconciler settled or re-sent its row", Role: "worker",
		Points: []string{killpoint.WorkerAfterClaim, killpoint.WorkerAfterSend},
		Moved:  scenario.Cond{Any: []scenario.Cond{fresh(history.Settle, "reconciler-"), fresh(history.ResendClaim, "reconciler-")}},
		Shape:  func(s *Schedule) { s.Reconcile = "resend" },
	},
	{
		Name: "a relay after another relay published and marked its rows", Role: "relay",
		Points: []string{killpoint.RelayAfterClaim, killpoint.RelayAfterPublish, killpoint.RelayBeforeMark},
		Moved:  fresh(history.Mark, "relay-2"),
		Shape:  func(s *Schedule) { s.Relays = max(s.Relays, 2) },
	},
	{
		Name: "a reconciler after another settled or re-sent its row", Role: "reconciler",
		Points: []string{killpoint.ReconcileAfterLookup, killpoint.ReconcileBeforeSettle, killpoint.ReconcileAfterResendClaim},
		Moved:  scenario.Cond{Any: []scenario.Cond{fresh(history.Settle, "reconciler-2"), fresh(history.ResendClaim, "reconciler-2")}},
		Shape:  func(s *Schedule) { s.Reconcile, s.Reconcilers = "resend", 2; s.unknownOutcome() },
	},
}

// StaleActors names the stale actors a schedule may draw, in draw order.
func StaleActors() []string {
	out := make([]string, len(staleActors))
	for i, a := range staleActors {
		out[i] = a.Name
	}
	return out
}

// staleActor draws, after every older choice, one actor left behind: the
// first pod of its role frozen at a point of its own, kept frozen until the
// others moved its row (at most a drawn bound), then resumed. A schedule
// freezes at most one pod: when a pause is drawn already, or a swarm
// schedule left pauses out, it is left out (its draws still taken).
func (s *Schedule) staleActor(d Draw) {
	if d.Int("stale actor", 0, 3) != 0 {
		return
	}
	a := staleActors[d.Int("stale", 0, len(staleActors)-1)]
	point := a.Points[d.Int("stale point", 0, len(a.Points)-1)]
	hit := d.Int("stale hit", 1, 2)
	bound := time.Duration(d.Int("stale bound ms", 5000, 10000)) * time.Millisecond
	if !s.mayFreeze() {
		return
	}
	a.Shape(s)
	moved := a.Moved
	s.Faults = append(s.Faults,
		Timed{Spec: faults.Spec{Kind: faults.KindPausePoint, Point: point, Hit: hit}, When: WhenArmed, Role: a.Role, Stale: a.Name},
		Timed{Spec: faults.Spec{Kind: faults.KindResume, Pod: a.Role + "-1"}, When: WhenPaused, For: faults.Duration(bound), Until: &moved, Stale: a.Name})
}

// addStale counts a judged schedule's stale actor, if it drew one, under
// the actor's name in Coverage.Held: drawn, and held (its pod froze at its
// point, by the fault ledger).
func (c *Coverage) addStale(s Schedule, recs []checker.FaultRecord) {
	i := slices.IndexFunc(s.Faults, func(t Timed) bool { return t.Stale != "" && t.Kind == faults.KindPausePoint })
	if i < 0 {
		return
	}
	pause := s.Faults[i]
	if c.Held == nil {
		c.Held = map[string]int{}
	}
	c.Held[pause.Stale+HeldDrawn]++
	if slices.ContainsFunc(recs, func(r checker.FaultRecord) bool {
		return firedAt(r, faults.KindPausePoint, pause.Point)
	}) {
		c.Held[pause.Stale+HeldFroze]++
	}
}
