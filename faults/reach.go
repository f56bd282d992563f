package faults

import (
	"slices"
	"strings"

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
	// Components are what it acts on: pod roles (relay, worker, job,
	// cleanup, reconciler, migrate), links by name, infrastructure nodes,
	// tables (outbox, inbox), the schema, the vendor, the main queue, a
	// member, the pods' clock. None: it does not know (an automatic crash
	// point, armed in whichever pod reaches it), and an invariant that asks
	// must assume it acts on everything.
	Components []string
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
	r := Reach{Components: []string{strings.SplitN(point, ".", 2)[0]}}
	if p, ok := pointPhases[point]; ok {
		r.Phases = []string{p}
	}
	return r
}

// Component names that are not a pod role, a link or a node.
const (
	ComponentVendor    = "vendor"
	ComponentMainQueue = "main queue"
	ComponentOutbox    = "outbox"
	ComponentInbox     = "inbox"
	ComponentSchema    = "schema"
	ComponentMember    = "member"
	ComponentClock     = "clock"
	ComponentBroker    = "rabbitmq" // the broker, whichever of its nodes
)

// roleOfPod is the role of a pod named "<role>-<n>".
func roleOfPod(pod string) string {
	if i := strings.LastIndexByte(pod, '-'); i > 0 {
		return pod[:i]
	}
	return pod
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

// Reach is the send, or a reconciler's lookup for a report mode, at the
// vendor.
func (v *VendorRule) Reach() Reach {
	if slices.Contains(lookupModes, v.Rule.Mode) {
		return Reach{Phases: []string{PhaseReconcile}, Components: []string{ComponentVendor}}
	}
	return Reach{Phases: []string{PhaseSend}, Components: []string{ComponentVendor}}
}

// Reach is the consume: the worker meets the message on the main queue.
func (p *Poison) Reach() Reach {
	return Reach{Phases: []string{PhaseConsume}, Components: []string{ComponentMainQueue}}
}

// Reach is the consume: the worker's consent check meets the member.
func (*WithdrawConsent) Reach() Reach {
	return Reach{Phases: []string{PhaseConsume}, Components: []string{ComponentMember}}
}

// Reach is the claim: the relay's time-of-day rules read the pods' clock.
func (c *ClockStep) Reach() Reach {
	return Reach{Phases: []string{PhaseClaim}, Components: []string{ComponentClock}}
}

// Reach: a link fault holds on its link while it is in place.
func (l *LinkDown) Reach() Reach { return Reach{Windowed: true, Components: []string{l.Link}} }

// Reach: a link fault holds on its link while it is in place.
func (l *LinkLatency) Reach() Reach { return Reach{Windowed: true, Components: []string{l.Link}} }

// Reach: a link fault holds on its link while it is in place.
func (l *LinkStall) Reach() Reach { return Reach{Windowed: true, Components: []string{l.Link}} }

// Reach: a node fault holds on its node while it is in place.
func (c *NodeCrash) Reach() Reach { return Reach{Windowed: true, Components: []string{c.Node}} }

// Reach: a node fault holds on its node while it is in place.
func (r *NodeRestart) Reach() Reach { return Reach{Windowed: true, Components: []string{r.Node}} }

// Reach: a node fault holds on its node while it is in place.
func (f *NodeFreeze) Reach() Reach { return Reach{Windowed: true, Components: []string{f.Node}} }

// Reach: the loss holds on the broker until the node returns.
func (l *LeaderLoss) Reach() Reach {
	return Reach{Windowed: true, Components: []string{ComponentBroker}}
}

// Reach: the killed pod's role.
func (k *Kill) Reach() Reach { return Reach{Components: []string{roleOfPod(k.Pod)}} }

// Reach: the stopped pod's role.
func (s *Sigterm) Reach() Reach { return Reach{Components: []string{roleOfPod(s.Pod)}} }

// Reach: the continued pod's role.
func (r *Resume) Reach() Reach { return Reach{Components: []string{roleOfPod(r.Pod)}} }

// Reach: the deployment's role.
func (r *RollingRestart) Reach() Reach { return Reach{Components: []string{r.Deployment}} }

// Reach: the main queue's binding.
func (*Unbind) Reach() Reach { return Reach{Components: []string{ComponentMainQueue}} }

// Reach: the main queue, where the parked copy goes back.
func (*ReplayParked) Reach() Reach { return Reach{Components: []string{ComponentMainQueue}} }

// Reach: the outbox's PENDING rows.
func (*HoldRows) Reach() Reach { return Reach{Components: []string{ComponentOutbox}} }

// Reach: the schema, under its migration lock.
func (*HoldMigration) Reach() Reach { return Reach{Components: []string{ComponentSchema}} }

// Reach: the held table.
func (h *HoldTable) Reach() Reach { return Reach{Components: []string{h.Table}} }

// Reach: the message's inbox row.
func (*HoldInboxRow) Reach() Reach { return Reach{Components: []string{ComponentInbox}} }
