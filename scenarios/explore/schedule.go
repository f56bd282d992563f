package explore

import (
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/outboxchaos/outboxchaos/fakevendor"
	"github.com/outboxchaos/outboxchaos/faults"
	"github.com/outboxchaos/outboxchaos/history"
	"github.com/outboxchaos/outboxchaos/rig"
	"github.com/outboxchaos/outboxchaos/scenarios/catalogue"
	"github.com/outboxchaos/outboxchaos/scenarios/scenario"
	"github.com/outboxchaos/outboxchaos/system/killpoint"
	"github.com/outboxchaos/outboxchaos/system/notification"
)

// Draw is the source of choices for a random schedule: rapid's *rapid.T in
// the property test, a seeded math/rand in reports.
type Draw interface {
	// Int returns an integer in [lo, hi]; label names the choice.
	Int(label string, lo, hi int) int
}

// Timed is one fault of a schedule: the fault as the catalogue writes it
// (a faults.Spec) and when it goes in. A schedule's timing is a small
// closed vocabulary, the When values:
//
//   - WhenFirst: injected before anything runs (the vendor's modes);
//   - WhenArmed: armed in the first pod of Role as it starts (a kill-point,
//     failpoint or pause-point); in role "job", the first batch job run,
//     which dies, before the job runs again;
//   - WhenArmedEvery: armed in every pod of Role (a stepped clock);
//   - WhenRunning: injected once the pods started (a withdrawn consent);
//   - WhenConsuming: injected once a worker consumes (a poison message);
//   - WhenWindow: in place from After to After+For on the schedule's own
//     time axis, skipped if it cannot be put in place (links, nodes);
//   - WhenEnd: injected after every window (a frozen pod's resume);
//   - WhenPaused: a resume For after its pod froze at its pause-point (a
//     "thaw" step beside the windows), with the Held faults in place
//     meanwhile.
type Timed struct {
	faults.Spec
	When  string          `json:"when"`
	Role  string          `json:"role,omitempty"`
	After faults.Duration `json:"after,omitempty"`
	For   faults.Duration `json:"for,omitempty"`
	// Boundary and Band: a fault sized by a deadline (swarm.go) names
	// the boundary its duration was drawn around, and the band.
	Boundary string `json:"boundary,omitempty"`
	Band     string `json:"band,omitempty"`
	// Held are the faults in place while a WhenPaused resume's pod is
	// frozen, and Overhang after it resumed: a held pair (pairs.go) hits
	// the other unit meanwhile, and the pod's first steps after.
	Held     []faults.Spec   `json:"held,omitempty"`
	Overhang faults.Duration `json:"overhang,omitempty"`
	// Pair names the held pair the fault belongs to.
	Pair string `json:"pair,omitempty"`
	// Until: a WhenPaused resume waits for it once its pod froze (For
	// bounds the wait); Stale names the stale actor (stale.go) the fault
	// belongs to.
	Until *scenario.Cond `json:"until,omitempty"`
	Stale string         `json:"stale,omitempty"`
}

// The When values of a Timed fault.
const (
	WhenFirst      = "first"
	WhenArmed      = "armed"
	WhenArmedEvery = "armed-every"
	WhenRunning    = "running"
	WhenConsuming  = "consuming"
	WhenWindow     = "window"
	WhenEnd        = "end"
	WhenPaused     = "paused"
)

// String describes the fault as it describes itself, and when it goes in.
func (t Timed) String() string {
	what := t.Kind
	if f, err := t.Spec.Build(); err == nil {
		what = f.String()
	}
	switch t.When {
	case WhenArmed:
		return what + " in " + t.Role
	case WhenArmedEvery:
		return what + " in every " + t.Role
	case WhenWindow:
		return fmt.Sprintf("%s at +%s for %s", what, t.After, t.For)
	case WhenPaused:
		if len(t.Held) > 0 {
			var held []string
			for _, h := range t.Held {
				if f, err := h.Build(); err == nil {
					held = append(held, f.String())
				}
			}
			return fmt.Sprintf("%s %s after it froze, meanwhile %s until %s after", what, t.For, strings.Join(held, " and "), t.Overhang)
		}
		if t.Until != nil {
			return fmt.Sprintf("%s once %s (at most %s) after it froze", what, t.Until, t.For)
		}
		return fmt.Sprintf("%s %s after it froze", what, t.For)
	}
	return what
}

// window is a fault in place from after to after+for, each in ms.
func window(spec faults.Spec, afterMS, forMS int) Timed {
	return Timed{Spec: spec, When: WhenWindow,
		After: faults.Duration(time.Duration(afterMS) * time.Millisecond), For: faults.Duration(time.Duration(forMS) * time.Millisecond)}
}

// Schedule is one random run: what is enqueued, the topology, the clock,
// and the faults.
type Schedule struct {
	PerKind int                 `json:"per_kind"`
	Kinds   []notification.Kind `json:"kinds"`
	JobRuns int                 `json:"job_runs"` // 2: the same business events enqueued twice
	Relays  int                 `json:"relays"`
	Workers int                 `json:"workers"`
	Start   string              `json:"start"` // Seoul time of day the virtual clock starts
	Drain   bool                `json:"drain"` // relays drain with overlapped batches (Relay.Drain)
	Faults  []Timed             `json:"faults"`
	// Config sets one setting at a boundary of its range (see
	// boundaries), or none.
	Config map[string]string `json:"config,omitempty"`
	// Reconcile runs a reconciler: "" none, "on" settling only, "resend"
	// with re-sends. Generate leaves it empty; the caller chooses, so the
	// same drawn schedule runs with and without reconciliation.
	Reconcile string `json:"reconcile,omitempty"`
	// Swarm lists the fault families a swarm schedule enabled (swarm.go);
	// a swarm schedule also drew its topology, modes (Reconcile too) and
	// settings. Empty: not a swarm schedule, the caller chooses Reconcile.
	Swarm []string `json:"swarm,omitempty"`
	// Reconcilers is how many reconciler pods run (0: one) when
	// Reconcile is set: two may look up and settle the same row at once.
	Reconcilers int `json:"reconcilers,omitempty"`
	// Feed is sustained load while the pipeline runs (feed.go), or none.
	Feed *Feed `json:"feed,omitempty"`
	// JobCut cuts one job run's database link in the middle of its
	// transaction (jobcut.go), or none.
	JobCut *JobCut `json:"job_cut,omitempty"`
	// Business shapes the seeded business rows as production has them
	// (schedule_audit.go), or nil.
	Business *scenario.BusinessShape `json:"business,omitempty"`
}

// ReconcileModes are the values of Schedule.Reconcile.
var ReconcileModes = []string{"", "on", "resend"}

func (s Schedule) String() string {
	var ev []string
	for _, f := range s.Faults {
		ev = append(ev, f.String())
	}
	var kinds []string
	for _, k := range s.Kinds {
		kinds = append(kinds, string(k))
	}
	out := fmt.Sprintf("%d×[%s] jobs=%d relays=%d drain=%v workers=%d start=%s faults=[%s]",
		s.PerKind, strings.Join(kinds, ","), s.JobRuns, s.Relays, s.Drain, s.Workers, s.Start, strings.Join(ev, "; "))
	if s.Reconcile != "" {
		out += " reconcile=" + s.Reconcile
	}
	if s.Reconcilers > 1 {
		out += fmt.Sprintf(" reconcilers=%d", s.Reconcilers)
	}
	keys := make([]string, 0, len(s.Config))
	for k := range s.Config {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		out += " " + k + "=" + s.Config[k]
	}
	if s.Swarm != nil {
		out += " swarm=[" + strings.Join(s.Swarm, ",") + "]"
	}
	if s.Feed != nil {
		out += " " + s.Feed.String()
	}
	if s.Business != nil {
		out += " " + s.Business.String()
	}
	if s.JobCut != nil {
		out += " " + s.JobCut.String()
	}
	return out
}

var (
	starts     = []string{"10:00:00", "10:00:00", "20:39:58", "20:49:58"}
	relayKills = []string{killpoint.RelayAfterClaim, killpoint.RelayAfterPublish, killpoint.RelayAfterConfirm}
	workerKill = []string{killpoint.WorkerBeforeClaim, killpoint.WorkerAfterClaim, killpoint.WorkerAfterSend, killpoint.WorkerAfterResult}
	failpoints = []string{killpoint.FailResultUpdate, killpoint.FailClaimResponse}
	modes      = []fakevendor.Mode{fakevendor.AcceptHang, fakevendor.Hang, fakevendor.Accept5xx, fakevendor.Fail5xx,
		fakevendor.Status401, fakevendor.Status403, fakevendor.Status429, fakevendor.TokenFail, fakevendor.Reset, fakevendor.AcceptReset,
		// Appended, so saved failfiles keep their modes: what a
		// reconciler meets (the first two also without one).
		fakevendor.LandLate, fakevendor.Undelivered, fakevendor.ReportWrong, fakevendor.ReportMissing, fakevendor.ReportPending,
		fakevendor.Lookup5xx, fakevendor.LookupHang, fakevendor.LookupMalformed,
		fakevendor.FailCode, fakevendor.LateBody, fakevendor.Malformed}
	reconcileKills = []string{killpoint.ReconcileAfterLookup, killpoint.ReconcileAfterResendClaim, killpoint.ReconcileAfterResend,
		killpoint.ReconcileBeforeSettle}
	links = []string{"postgres", "rabbitmq-relay", "rabbitmq-worker", "vendor"}
	// anywhere are the other times a schedule may start at (drawn after
	// every older choice, so saved failfiles keep their schedules): the
	// relay window's opening and closing, 08:59 Seoul (the UTC date is
	// still the day before until 09:00), and the cut-offs on a year's and
	// a month's last day.
	// boundaries are settings at the edge of their range, one drawn per
	// schedule: the smallest batch, the first failure alerting, a message
	// parked on its first return, no in-listener or retry-queue retries, a
	// main queue that nacks past one message, and the largest batch.
	boundaries = []map[string]string{{"batch-size": "1"}, {"alert-attempt": "1"}, {"delivery-limit": "1"},
		{"in-listener-retries": "0"}, {"retry-max": "0"}, {"queue-max-length": "1"}, {"batch-size": "10000"}}
	// workerPauses freeze the first worker holding a delivery: past its
	// peek, past its claim, past its vendor call.
	workerPauses = []string{killpoint.WorkerBeforeClaim, killpoint.WorkerAfterClaim, killpoint.WorkerAfterSend}
	anywhere     = []string{"08:00:00", "08:59:58", "20:54:58", "2026-12-31 20:39:58", "2027-02-28 20:49:58", "2027-03-01 08:59:58"}
)

// Generate draws a schedule.
func Generate(d Draw) Schedule {
	s := Schedule{
		PerKind: d.Int("per_kind", 1, 3),
		JobRuns: d.Int("job_runs", 1, 2),
		Relays:  d.Int("relays", 1, 2),
		Workers: d.Int("workers", 1, 2),
		Start:   starts[d.Int("start", 0, len(starts)-1)],
		Drain:   d.Int("relay drain", 0, 1) == 1,
	}
	for _, k := range notification.Kinds {
		if d.Int("kind "+string(k), 0, 2) > 0 {
			s.Kinds = append(s.Kinds, k)
		}
	}
	if len(s.Kinds) == 0 {
		s.Kinds = []notification.Kind{notification.GradeRenewal}
	}
	total := s.PerKind * len(s.Kinds)
	n := d.Int("faults", 0, 4)
	for i := 0; i < n; i++ {
		// Each case draws its choices in the order saved failfiles and
		// explore's seeds replay.
		switch d.Int("fault kind", 0, 7) {
		case 0:
			point := relayKills[d.Int("relay point", 0, len(relayKills)-1)]
			s.arm("relay", faults.Spec{Kind: faults.KindKillPoint, Point: point, Hit: d.Int("hit", 1, 2)})
		case 1:
			point := workerKill[d.Int("worker point", 0, len(workerKill)-1)]
			s.arm("worker", faults.Spec{Kind: faults.KindKillPoint, Point: point, Hit: d.Int("hit", 1, total)})
		case 2:
			point := failpoints[d.Int("failpoint", 0, len(failpoints)-1)]
			s.arm("worker", faults.Spec{Kind: faults.KindFailpoint, Point: point, Hit: d.Int("hit", 1, total)})
		case 3:
			mode := modes[d.Int("mode", 0, len(modes)-1)]
			v := faults.Spec{Kind: faults.KindVendor, Mode: string(mode), Msg: int64(d.Int("msg", 1, total)), Times: d.Int("times", 1, 3)}
			if mode == fakevendor.ReportWrong || mode == fakevendor.ReportMissing {
				// A report may be wrong for a while, never twice in a row
				// once final: the vendor contract (docs/reconcile.md).
				v.Times = 1
			}
			if mode == fakevendor.TokenFail {
				v.Msg = 0 // token requests name no message
			}
			s.Faults = append(s.Faults, Timed{Spec: v, When: WhenFirst})
		case 4:
			link := links[d.Int("link", 0, len(links)-1)]
			at := d.Int("at ms", 0, 1500)
			s.Faults = append(s.Faults, window(faults.Spec{Kind: faults.KindDown, Link: link}, at, d.Int("for ms", 100, 800)))
		case 5:
			link := links[d.Int("link", 0, len(links)-1)]
			at := d.Int("at ms", 0, 1500)
			spec := faults.Spec{Kind: faults.KindLatency, Link: link, Delay: faults.Duration(700 * time.Millisecond), Direction: string(rig.Downstream)}
			s.Faults = append(s.Faults, window(spec, at, d.Int("for ms", 200, 1500)))
		case 6:
			point := reconcileKills[d.Int("reconciler point", 0, len(reconcileKills)-1)]
			s.arm("reconciler", faults.Spec{Kind: faults.KindKillPoint, Point: point, Hit: d.Int("hit", 1, 2)})
		case 7:
			names := faults.PoisonNames()
			s.Faults = append(s.Faults, Timed{Spec: faults.Spec{Kind: faults.KindPoison, Poison: names[d.Int("poison", 0, len(names)-1)]}, When: WhenConsuming})
		}
	}
	if d.Int("relay clock past the scheduled date", 0, 5) == 0 {
		s.Faults = append(s.Faults, Timed{Spec: catalogue.ClockAt("+1d 10:00"), When: WhenArmedEvery, Role: "relay"})
	}
	if d.Int("job crash", 0, 3) == 0 {
		s.Faults = append(s.Faults, Timed{Spec: catalogue.Kill(killpoint.JobBeforeCommit), When: WhenArmed, Role: "job"})
	}
	// Newer choices, drawn last.
	if d.Int("start elsewhere", 0, 3) == 0 {
		s.Start = anywhere[d.Int("start at", 0, len(anywhere)-1)]
	}
	if d.Int("consent withdrawn", 0, 3) == 0 {
		m := int64(d.Int("member", 1, s.PerKind))
		// With one member per kind, a withdrawn consent skips every
		// message and the schedule exercises nothing else (found by the
		// error-branch map): drawn still, so later draws stay as they
		// were, but left out.
		if s.PerKind > 1 {
			s.Faults = append(s.Faults, Timed{Spec: faults.Spec{Kind: faults.KindWithdrawConsent, Member: m}, When: WhenRunning})
		}
	}
	if d.Int("a setting at its boundary", 0, 2) == 0 {
		s.Config = boundaries[d.Int("boundary", 0, len(boundaries)-1)]
	}
	if d.Int("claim race", 0, 3) == 0 {
		// The first worker freezes holding a delivery; the workers' broker
		// link is cut, so the delivery goes to another consumer while the
		// frozen one still holds it; the frozen one resumes at the end.
		s.Workers = 2
		point := workerPauses[d.Int("pause point", 0, len(workerPauses)-1)]
		s.arm("worker", faults.Spec{Kind: faults.KindPausePoint, Point: point, Hit: d.Int("hit", 1, total)})
		at := d.Int("at ms", 0, 1500)
		s.Faults = append(s.Faults, window(faults.Spec{Kind: faults.KindDown, Link: "rabbitmq-worker"}, at, d.Int("for ms", 100, 800)))
	}
	if d.Int("misrouted publish", 0, 4) == 0 {
		// One publish in the middle of a batch comes back unroutable.
		s.arm("relay", faults.Spec{Kind: faults.KindFailpoint, Point: killpoint.FailMisroute, Hit: d.Int("hit", 1, total)})
	}
	if d.Int("workers' database down", 0, 5) == 0 {
		at := d.Int("at ms", 0, 1500)
		s.Faults = append(s.Faults, window(faults.Spec{Kind: faults.KindDown, Link: "postgres-worker"}, at, d.Int("for ms", 100, 1500)))
	}
	// Drawn after every older choice: faults sized by the
	// deadlines, overlapping, then the swarm's choices (swarm.go).
	s.sized(d)
	if d.Int("swarm", 0, 3) > 0 {
		s.swarm(d)
	}
	s.feed(d)
	s.jobCut(d)
	s.auditDraws(d)
	s.conversation(d)
	s.heldPair(d)
	s.staleActor(d)
	return s
}

// drainBatch is the batch size of a draining relay: each batch is one
// publish window.
const drainBatch = 3

// arm arms spec in the first pod of role. A pod dies at most at one
// kill-point, so a kill-point joins only a pod nothing is armed in yet; a
// pause-point's pod is continued after every window.
func (s *Schedule) arm(role string, spec faults.Spec) {
	if spec.Kind == faults.KindKillPoint && slices.ContainsFunc(s.Faults, func(t Timed) bool { return t.When == WhenArmed && t.Role == role }) {
		return
	}
	s.Faults = append(s.Faults, Timed{Spec: spec, When: WhenArmed, Role: role})
	if spec.Kind == faults.KindPausePoint {
		s.Faults = append(s.Faults, Timed{Spec: faults.Spec{Kind: faults.KindResume, Pod: role + "-1"}, When: WhenEnd})
	}
}

// Scenario turns the schedule into a scenario on the same engine as the
// catalogue, placing each fault by its When: vendor rules injected first,
// the batch job (crashing before its commit, then re-run), pods with their
// kill-points, failpoints and clocks armed and supervised (killed pods
// restart as a deployment's would), then the link and node faults on the
// schedule's own time axis. Faults that never fire are allowed.
func (s Schedule) Scenario(name string) *scenario.Scenario {
	sc := &scenario.Scenario{
		Name: name, Row: "random", PerKind: s.PerKind, Kinds: s.Kinds, AllowUnfired: true, Start: s.Start,
		Description: s.String(),
		Fault:       fmt.Sprintf("%d random faults", len(s.Faults)),
		Outcome:     "nothing twice, nothing lost silently, nothing unexpected, nothing stuck",
		Business:    s.Business,
	}
	at := map[string][]faults.Spec{}
	armed, every := map[string][]faults.Spec{}, map[string][]faults.Spec{}
	var windows []scenario.Step
	for _, f := range s.Faults {
		switch f.When {
		case WhenArmed:
			armed[f.Role] = append(armed[f.Role], f.Spec)
		case WhenArmedEvery:
			every[f.Role] = append(every[f.Role], f.Spec)
		case WhenPaused:
			if !s.runs(f.Pod) {
				// Its pause-point was drawn in a role this schedule does
				// not run: nothing can freeze, and nothing is waited for.
				continue
			}
			windows = append(windows, scenario.Step{Do: "thaw", Pod: f.Pod, For: f.For, Faults: f.Held, Overhang: f.Overhang, Cond: f.Until})
			// A thaw that saw the run quiescent before the pod froze gives
			// up; a pod that freezes after that is continued once every
			// window is over, or it would hold its work to the end.
			if !slices.ContainsFunc(at[WhenEnd], func(sp faults.Spec) bool { return sp.Kind == faults.KindResume && sp.Pod == f.Pod }) {
				at[WhenEnd] = append(at[WhenEnd], faults.Spec{Kind: faults.KindResume, Pod: f.Pod})
			}
		case WhenWindow:
			if slices.Contains(nodeFaultKinds, f.Kind) {
				// On containers of the run's own; a broker silent for
				// three 1 s heartbeats is dropped.
				sc.Infra = "single"
				sc.Config = mergeConfig(sc.Config, map[string]string{"amqp-heartbeat": "1s"})
			}
			windows = append(windows, scenario.Step{Do: "during", Faults: []faults.Spec{f.Spec}, After: f.After, For: f.For, Optional: true})
		default:
			at[f.When] = append(at[f.When], f.Spec)
		}
	}
	if first := at[WhenFirst]; len(first) > 0 {
		sc.Steps = append(sc.Steps, catalogue.Inject(first...))
	}
	for i := 0; i < s.JobRuns; i++ {
		if i == 0 && len(armed["job"]) > 0 {
			sc.Steps = append(sc.Steps, catalogue.StartWith("job", armed["job"]...), catalogue.Await(scenario.Cond{Exited: "job-1"}))
		}
		if i == 0 && s.JobCut != nil && s.JobCut.Round == 0 {
			sc.Steps = append(sc.Steps, cutEnqueue(catalogue.Enqueue(), s.JobCut))
			continue
		}
		sc.Steps = append(sc.Steps, catalogue.Enqueue())
	}
	pods := func(role string, n int) {
		for i := 0; i < n; i++ {
			st := scenario.Step{Do: "start", Roles: []string{role}, Supervise: true}
			if i == 0 {
				st.Faults = append(st.Faults, armed[role]...)
			}
			st.Faults = append(st.Faults, every[role]...)
			if role == "relay" && s.Drain {
				st.Env = []string{"OUTBOXCHAOS_RELAY_DRAIN=true", "OUTBOXCHAOS_BATCH_SIZE=" + strconv.Itoa(drainBatch)}
			}
			sc.Steps = append(sc.Steps, st)
		}
	}
	pods("worker", s.Workers)
	pods("relay", s.Relays)
	pods("cleanup", 1)
	if len(s.Config) > 0 {
		sc.Config = mergeConfig(sc.Config, s.Config)
	}
	if s.Reconcile != "" {
		pods("reconciler", max(s.Reconcilers, 1))
		if s.Reconcile == "resend" {
			sc.Config = mergeConfig(sc.Config, map[string]string{"reconcile-resend": "true"})
		}
	}
	if business := at[WhenRunning]; len(business) > 0 {
		// While the pods start: the relay, the worker or no one skips,
		// as the race goes; the members table judges either way.
		sc.Steps = append(sc.Steps, catalogue.Inject(business...))
	}
	if poisons := at[WhenConsuming]; len(poisons) > 0 {
		// Published once a worker consumes (the topology exists then).
		sc.Steps = append(sc.Steps, catalogue.Await(catalogue.PodEvent(history.ConsumeStart, "worker-", 1)), catalogue.Inject(poisons...))
	}
	windows = append(windows, s.feedSteps()...)
	if s.Feed != nil {
		sc.Settle = faults.Duration(s.feedSettle(sc))
	}
	if len(windows) > 0 {
		sort.SliceStable(windows, func(i, j int) bool { return windows[i].After < windows[j].After })
		sc.Steps = append(sc.Steps, scenario.Step{Do: "parallel", Steps: windows})
	}
	if end := at[WhenEnd]; len(end) > 0 {
		// After every window: a frozen worker holds its delivery until
		// continued, and the run cannot settle while it does.
		sc.Steps = append(sc.Steps, catalogue.Inject(end...))
	}
	return sc
}

// runs reports whether the schedule starts pod (role-N): a pause drawn
// for a role the schedule runs none of has nothing to continue.
func (s Schedule) runs(pod string) bool {
	role, n, ok := strings.Cut(pod, "-")
	if !ok {
		return false
	}
	i, err := strconv.Atoi(n)
	if err != nil {
		return false
	}
	count := map[string]int{"worker": s.Workers, "relay": s.Relays, "cleanup": 1, "job": s.JobRuns}
	if s.Reconcile != "" {
		count["reconciler"] = max(s.Reconcilers, 1)
	}
	return i >= 1 && i <= count[role]
}

// mergeConfig returns a with b's settings over it.
func mergeConfig(a, b map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range a {
		out[k] = v
	}
	for k, v := range b {
		out[k] = v
	}
	return out
}
