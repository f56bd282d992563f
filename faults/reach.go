package faults

import (
	"slices"

	"github.com/outboxchaos/outboxchaos/fakevendor"
	"github.com/outboxchaos/outboxchaos/system/killpoint"
)

// The pipeline's phases a fault can meet, in pipeline order.
const (
	PhaseEnqueue     = "enqueue"
	PhaseClaim       = "claim"
	PhasePublish     = "publish"
	PhaseMark        = "mark"
	PhaseConsume     = "consume"
	PhaseWorkerClaim = "worker-claim"
	PhaseSend        = "send"
	PhaseResult      = "result"
	PhaseCleanup     = "cleanup"
	PhaseReconcile   = "reconcile"
	// PhaseIdle is a fault in place while no phase logged anything.
	PhaseIdle = "idle"
)

// Phases are the phases in pipeline order, idle last.
var Phases = []string{PhaseEnqueue, PhaseClaim, PhasePublish, PhaseMark, PhaseConsume, PhaseWorkerClaim,
	PhaseSend, PhaseResult, PhaseCleanup, PhaseReconcile, PhaseIdle}

// Reach is where a fault meets the pipeline, as far as it knows from what
// it is. The fault ledger keeps it beside the fault (checker.FaultRecord),
// and coverage reads it there.
type Reach struct {
	// Phases it acts at, known from what it is: a point's phase, a vendor
	// mode's. None: it reaches the phases the pipeline logged while it
	// was in place.
	Phases []string
	// Windowed: it holds for a while (a link or node fault) and is in
	// place for all of it; a fault that is not is in place until its
	// phase last logged anything.
	Windowed bool
}

// Reacher is a fault that states its reach; one that does not reaches the
// phases logged while it was in place, and is not windowed.
type Reacher interface {
	Reach() Reach
}

// ReachOf is f's reach (the zero Reach for a fault that states none).
func ReachOf(f Fault) Reach {
	if r, ok := f.(Reacher); ok {
		return r.Reach()
	}
	return Reach{}
}

// pointPhases is the phase of each kill-point and failpoint (a
// pause-point freezes at a kill-point).
var pointPhases = map[string]string{
	killpoint.JobBeforeCommit: PhaseEnqueue, killpoint.JobAfterCoupon: PhaseEnqueue, killpoint.FailAnniversaryOutbox: PhaseEnqueue,
	killpoint.RelayAfterClaim: PhaseClaim, killpoint.RelayAfterPublish: PhasePublish, killpoint.RelayBeforePublish: PhasePublish,
	killpoint.RelayAfterConfirm: PhasePublish, killpoint.FailMisroute: PhasePublish, killpoint.FailRefuse: PhasePublish,
	killpoint.RelayAfterFail:  PhasePublish,
	killpoint.RelayBeforeMark: PhaseMark, killpoint.RelayAfterFinish: PhaseMark, killpoint.FailFinishResponse: PhaseMark,
	killpoint.WorkerOnDelivery: PhaseConsume, killpoint.WorkerBeforeClaim: PhaseConsume, killpoint.WorkerAfterPark: PhaseConsume,
	killpoint.WorkerAfterClaim: PhaseWorkerClaim, killpoint.FailClaimResponse: PhaseWorkerClaim,
	killpoint.WorkerAfterSend:   PhaseSend,
	killpoint.WorkerAfterResult: PhaseResult, killpoint.WorkerAfterErrorResult: PhaseResult, killpoint.FailResultUpdate: PhaseResult,
	killpoint.FailReleaseResponse:  PhaseResult,
	killpoint.CleanupBeforeUpdate:  PhaseCleanup,
	killpoint.ReconcileAfterLookup: PhaseReconcile, killpoint.ReconcileBeforeSettle: PhaseReconcile,
	killpoint.ReconcileAfterResendClaim: PhaseReconcile, killpoint.ReconcileAfterResend: PhaseReconcile,
}

// pointReach is the reach of a fault at point: its phase, or none for a
// point of no phase.
func pointReach(point string) Reach {
	if p, ok := pointPhases[point]; ok {
		return Reach{Phases: []string{p}}
	}
	return Reach{}
}

// lookupModes are the vendor modes that bite at a reconciler's lookup;
// every other mode bites at the send.
var lookupModes = []fakevendor.Mode{fakevendor.ReportWrong, fakevendor.ReportMissing, fakevendor.ReportPending,
	fakevendor.Lookup5xx, fakevendor.LookupHang, fakevendor.LookupMalformed}

// Reach is the point's phase.
func (k *Killpoint) Reach() Reach { return pointReach(k.Point) }

// Reach is the point's phase.
func (f *Failpoint) Reach() Reach { return pointReach(f.Point) }

// Reach is the phase of the point the pod freezes at.
func (f *Pausepoint) Reach() Reach { return pointReach(f.Point) }

// Reach is the send, or a reconciler's lookup for a report mode.
func (v *VendorRule) Reach() Reach {
	if slices.Contains(lookupModes, v.Rule.Mode) {
		return Reach{Phases: []string{PhaseReconcile}}
	}
	return Reach{Phases: []string{PhaseSend}}
}

// Reach is the consume: the worker meets the message.
func (p *Poison) Reach() Reach { return Reach{Phases: []string{PhaseConsume}} }

// Reach is the consume: the worker's consent check meets it.
func (*WithdrawConsent) Reach() Reach { return Reach{Phases: []string{PhaseConsume}} }

// Reach is the claim: the relay's time-of-day rules read the clock.
func (c *ClockStep) Reach() Reach { return Reach{Phases: []string{PhaseClaim}} }

// Reach: a link fault holds while it is in place.
func (f *toxicFault) Reach() Reach { return Reach{Windowed: true} }

// Reach: a node fault holds while it is in place.
func (c *NodeCrash) Reach() Reach { return Reach{Windowed: true} }

// Reach: a node fault holds while it is in place.
func (r *NodeRestart) Reach() Reach { return Reach{Windowed: true} }

// Reach: a node fault holds while it is in place.
func (f *NodeFreeze) Reach() Reach { return Reach{Windowed: true} }

// Reach: a node fault holds while it is in place.
func (l *LeaderLoss) Reach() Reach { return Reach{Windowed: true} }
