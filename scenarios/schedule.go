package scenarios

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/outboxchaos/outboxchaos/checker"
	"github.com/outboxchaos/outboxchaos/fakevendor"
	"github.com/outboxchaos/outboxchaos/faults"
	"github.com/outboxchaos/outboxchaos/system/killpoint"
	"github.com/outboxchaos/outboxchaos/system/notification"
	"github.com/outboxchaos/outboxchaos/world"
)

// Draw is the source of choices for a random schedule: rapid's *rapid.T in
// the property test, a seeded math/rand in reports.
type Draw interface {
	// Int returns an integer in [lo, hi]; label names the choice.
	Int(label string, lo, hi int) int
}

// FaultEvent is one fault of a schedule.
type FaultEvent struct {
	Kind   string        `json:"kind"`            // killpoint | failpoint | vendor | latency | down | poison
	Target string        `json:"target"`          // pod role, proxy name, vendor mode, or what makes it poison
	Point  string        `json:"point,omitempty"` // kill-point / failpoint name
	Hit    int           `json:"hit,omitempty"`   // on the Nth hit
	Msg    int           `json:"msg,omitempty"`   // vendor rule: outbox id
	Times  int           `json:"times,omitempty"` // vendor rule: how often
	At     time.Duration `json:"at,omitempty"`    // network fault: offset after the pipeline starts
	For    time.Duration `json:"for,omitempty"`   // network fault: how long
}

func (f FaultEvent) String() string {
	switch f.Kind {
	case "killpoint", "failpoint", "pausepoint":
		return fmt.Sprintf("%s %s:%d in %s", f.Kind, f.Point, f.Hit, f.Target)
	case "clock":
		return "relay clock +1 day"
	case "poison":
		return "poison " + f.Target
	case "consent":
		return fmt.Sprintf("member %d withdraws consent", f.Msg)
	case "crash", "restart", "freeze":
		return fmt.Sprintf("%s %s at +%s for %s", f.Kind, f.Target, f.At, f.For)
	case "vendor":
		return fmt.Sprintf("vendor %s for %s ×%d", f.Target, checker.MessageID(int64(f.Msg)), f.Times)
	default:
		return fmt.Sprintf("%s on %s at +%s for %s", f.Kind, f.Target, f.At, f.For)
	}
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
	Events  []FaultEvent        `json:"events"`
	// Config sets one setting at a boundary of its range (see
	// boundaries), or none.
	Config map[string]string `json:"config,omitempty"`
	// Reconcile runs a reconciler: "" none, "on" settling only, "resend"
	// with re-sends. Generate leaves it empty; the caller chooses, so the
	// same drawn schedule runs with and without reconciliation.
	Reconcile string `json:"reconcile,omitempty"`
}

// ReconcileModes are the values of Schedule.Reconcile.
var ReconcileModes = []string{"", "on", "resend"}

func (s Schedule) String() string {
	var ev []string
	for _, e := range s.Events {
		ev = append(ev, e.String())
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
	for k, v := range s.Config {
		out += " " + k + "=" + v
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
		var f FaultEvent
		switch d.Int("fault kind", 0, 7) {
		case 0:
			f = FaultEvent{Kind: "killpoint", Target: "relay", Point: relayKills[d.Int("relay point", 0, len(relayKills)-1)], Hit: d.Int("hit", 1, 2)}
		case 1:
			f = FaultEvent{Kind: "killpoint", Target: "worker", Point: workerKill[d.Int("worker point", 0, len(workerKill)-1)], Hit: d.Int("hit", 1, total)}
		case 2:
			f = FaultEvent{Kind: "failpoint", Target: "worker", Point: failpoints[d.Int("failpoint", 0, len(failpoints)-1)], Hit: d.Int("hit", 1, total)}
		case 3:
			f = FaultEvent{Kind: "vendor", Target: string(modes[d.Int("mode", 0, len(modes)-1)]), Msg: d.Int("msg", 1, total), Times: d.Int("times", 1, 3)}
			if m := fakevendor.Mode(f.Target); m == fakevendor.ReportWrong || m == fakevendor.ReportMissing {
				// A report may be wrong for a while, never twice in a row
				// once final: the vendor contract (docs/reconcile.md).
				f.Times = 1
			}
		case 4:
			f = FaultEvent{Kind: "down", Target: links[d.Int("link", 0, len(links)-1)],
				At: time.Duration(d.Int("at ms", 0, 1500)) * time.Millisecond, For: time.Duration(d.Int("for ms", 100, 800)) * time.Millisecond}
		case 5:
			f = FaultEvent{Kind: "latency", Target: links[d.Int("link", 0, len(links)-1)],
				At: time.Duration(d.Int("at ms", 0, 1500)) * time.Millisecond, For: time.Duration(d.Int("for ms", 200, 1500)) * time.Millisecond}
		case 6:
			f = FaultEvent{Kind: "killpoint", Target: "reconciler", Point: reconcileKills[d.Int("reconciler point", 0, len(reconcileKills)-1)], Hit: d.Int("hit", 1, 2)}
		case 7:
			names := faults.PoisonNames()
			f = FaultEvent{Kind: "poison", Target: names[d.Int("poison", 0, len(names)-1)]}
		}
		if f.Kind == "killpoint" && f.Target == "job" {
			continue
		}
		s.Events = append(s.Events, f)
	}
	if d.Int("relay clock past the scheduled date", 0, 5) == 0 {
		s.Events = append(s.Events, FaultEvent{Kind: "clock", Target: "relay"})
	}
	if d.Int("job crash", 0, 3) == 0 {
		s.Events = append(s.Events, FaultEvent{Kind: "killpoint", Target: "job", Point: killpoint.JobBeforeCommit, Hit: 1})
	}
	// Newer choices, drawn last.
	if d.Int("start elsewhere", 0, 3) == 0 {
		s.Start = anywhere[d.Int("start at", 0, len(anywhere)-1)]
	}
	if d.Int("consent withdrawn", 0, 3) == 0 {
		s.Events = append(s.Events, FaultEvent{Kind: "consent", Target: "member", Msg: d.Int("member", 1, s.PerKind)})
	}
	if d.Int("a setting at its boundary", 0, 2) == 0 {
		s.Config = boundaries[d.Int("boundary", 0, len(boundaries)-1)]
	}
	if d.Int("claim race", 0, 3) == 0 {
		// The first worker freezes holding a delivery; the workers' broker
		// link is cut, so the delivery goes to another consumer while the
		// frozen one still holds it; the frozen one resumes at the end.
		s.Workers = 2
		s.Events = append(s.Events, FaultEvent{Kind: "pausepoint", Target: "worker",
			Point: workerPauses[d.Int("pause point", 0, len(workerPauses)-1)], Hit: d.Int("hit", 1, total)},
			FaultEvent{Kind: "down", Target: "rabbitmq-worker",
				At: time.Duration(d.Int("at ms", 0, 1500)) * time.Millisecond, For: time.Duration(d.Int("for ms", 100, 800)) * time.Millisecond})
	}
	if d.Int("misrouted publish", 0, 4) == 0 {
		// One publish in the middle of a batch comes back unroutable.
		s.Events = append(s.Events, FaultEvent{Kind: "failpoint", Target: "relay", Point: killpoint.FailMisroute, Hit: d.Int("hit", 1, total)})
	}
	if d.Int("workers' database down", 0, 5) == 0 {
		s.Events = append(s.Events, FaultEvent{Kind: "down", Target: "postgres-worker",
			At: time.Duration(d.Int("at ms", 0, 1500)) * time.Millisecond, For: time.Duration(d.Int("for ms", 100, 1500)) * time.Millisecond})
	}
	return s
}

// Scenario turns the schedule into a scenario on the same engine as the
// catalogue: vendor rules injected first, the batch job (crashing before
// its commit, then re-run), pods with their kill-points, failpoints and
// clocks armed and supervised (killed pods restart as a deployment's
// would), then the link faults on the schedule's own time axis. Faults
// that never fire are allowed.
func (s Schedule) Scenario(name string) *Scenario {
	sc := &Scenario{
		Name: name, Row: "random", PerKind: s.PerKind, Kinds: s.Kinds, AllowUnfired: true, Start: s.Start,
		Description: s.String(),
		Fault:       fmt.Sprintf("%d random faults", len(s.Events)),
		Outcome:     "nothing twice, nothing lost silently, nothing unexpected, nothing stuck",
	}
	armed := map[string][]faults.Spec{}
	var vendor, poisons, business []faults.Spec
	var windows []Step
	jobCrash, relayClock, paused := false, false, false
	for _, f := range s.Events {
		switch f.Kind {
		case "vendor":
			v := faults.Spec{Kind: "vendor", Mode: f.Target, Msg: int64(f.Msg), Times: f.Times}
			if fakevendor.Mode(f.Target) == fakevendor.TokenFail {
				v.Msg = 0
			}
			vendor = append(vendor, v)
		case "killpoint":
			if f.Target == "job" {
				jobCrash = true
			} else if len(armed[f.Target]) == 0 {
				armed[f.Target] = append(armed[f.Target], faults.Spec{Kind: "kill-point", Point: f.Point, Hit: f.Hit})
			}
		case "failpoint":
			armed[f.Target] = append(armed[f.Target], faults.Spec{Kind: "failpoint", Point: f.Point, Hit: f.Hit})
		case "pausepoint":
			armed[f.Target] = append(armed[f.Target], faults.Spec{Kind: "pause-point", Point: f.Point, Hit: f.Hit})
			paused = true
		case "clock":
			relayClock = true
		case "poison":
			poisons = append(poisons, faults.Spec{Kind: "poison", Poison: f.Target})
		case "consent":
			business = append(business, faults.Spec{Kind: "withdraw-consent", Member: int64(f.Msg)})
		case "crash", "restart", "freeze":
			// On containers of the run's own; a broker silent for three
			// 1 s heartbeats is dropped.
			sc.Infra = "single"
			sc.Config = mergeConfig(sc.Config, map[string]string{"amqp-heartbeat": "1s"})
			windows = append(windows, Step{Do: "during", Faults: []faults.Spec{{Kind: f.Kind, Node: f.Target}},
				After: faults.Duration(f.At), For: faults.Duration(f.For), Optional: true})
		default:
			spec := faults.Spec{Kind: f.Kind, Link: f.Target}
			if f.Kind == "latency" {
				spec.Delay, spec.Direction = faults.Duration(700*time.Millisecond), string(world.Downstream)
			}
			windows = append(windows, Step{Do: "during", Faults: []faults.Spec{spec},
				After: faults.Duration(f.At), For: faults.Duration(f.For), Optional: true})
		}
	}
	if len(vendor) > 0 {
		sc.Steps = append(sc.Steps, inject(vendor...))
	}
	for i := 0; i < s.JobRuns; i++ {
		if i == 0 && jobCrash {
			sc.Steps = append(sc.Steps, startWith("job", kill(killpoint.JobBeforeCommit)), await(Cond{Exited: "job-1"}))
		}
		sc.Steps = append(sc.Steps, enqueue())
	}
	pods := func(role string, n int) {
		for i := 0; i < n; i++ {
			st := Step{Do: "start", Roles: []string{role}, Supervise: true}
			if i == 0 {
				st.Faults = append(st.Faults, armed[role]...)
			}
			if role == "relay" {
				if relayClock {
					st.Faults = append(st.Faults, clockAt("+1d 10:00"))
				}
				if s.Drain {
					st.Env = []string{"OUTBOXCHAOS_RELAY_DRAIN=true", "OUTBOXCHAOS_BATCH_SIZE=3"}
				}
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
		pods("reconciler", 1)
		if s.Reconcile == "resend" {
			sc.Config = mergeConfig(sc.Config, map[string]string{"reconcile-resend": "true"})
		}
	}
	if len(business) > 0 {
		// While the pods start: the relay, the worker or no one skips,
		// as the race goes; the members table judges either way.
		sc.Steps = append(sc.Steps, inject(business...))
	}
	if len(poisons) > 0 {
		// Published once a worker consumes (the topology exists then).
		sc.Steps = append(sc.Steps, await(podEvent("consume-start", "worker-", 1)), inject(poisons...))
	}
	if len(windows) > 0 {
		sort.SliceStable(windows, func(i, j int) bool { return windows[i].After < windows[j].After })
		sc.Steps = append(sc.Steps, Step{Do: "parallel", Steps: windows})
	}
	if paused {
		// After every window: a frozen worker holds its delivery until
		// continued, and the run cannot settle while it does.
		sc.Steps = append(sc.Steps, inject(faults.Spec{Kind: "resume", Pod: "worker-1"}))
	}
	return sc
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
