package scenarios

import (
	"time"

	"github.com/outboxchaos/outboxchaos/checker"
	"github.com/outboxchaos/outboxchaos/fakevendor"
	"github.com/outboxchaos/outboxchaos/faults"
	"github.com/outboxchaos/outboxchaos/system/notification"
	"github.com/outboxchaos/outboxchaos/world"
)

// The words the catalogue is written in: short constructors for steps,
// conditions, faults and rules, so that each entry reads as its row.

// Steps.

// Enqueue runs the batch job once, seeding the scenario's members.
func Enqueue() Step              { return Step{Do: "enqueue"} }
func enqueueN(perKind int) Step  { return Step{Do: "enqueue", PerKind: perKind} }
func start(roles ...string) Step { return Step{Do: "start", Roles: roles} }
func pipeline() Step             { return start("relay", "worker", "cleanup") }

// Await waits until c holds.
func Await(c Cond) Step            { return Step{Do: "await", Cond: &c} }
func assert(c Cond) Step           { return Step{Do: "assert", Cond: &c} }
func restart(pod string) Step      { return Step{Do: "restart", Pod: pod} }
func stop(pod string) Step         { return Step{Do: "stop", Pod: pod} }
func note(s Step, why string) Step { s.Note = why; return s }

// StartWith starts one pod of role with pod faults armed in it.
func StartWith(role string, fs ...faults.Spec) Step {
	return Step{Do: "start", Roles: []string{role}, Faults: fs}
}

// startEnv starts one pod of role with extra settings (KEY=VALUE).
func startEnv(role string, env ...string) Step {
	return Step{Do: "start", Roles: []string{role}, Env: env}
}

// Inject puts faults in place for the rest of the run.
func Inject(fs ...faults.Spec) Step { return Step{Do: "inject", Faults: fs} }

// recoverFaults takes away faults an inject step put in place.
func recoverFaults(fs ...faults.Spec) Step { return Step{Do: "recover", Faults: fs} }

// during holds fs in place while steps run and until c holds.
func during(fs []faults.Spec, c Cond, steps ...Step) Step {
	return Step{Do: "during", Faults: fs, Cond: &c, Steps: steps}
}

// within sets how long step s may wait for its condition.
func within(s Step, d time.Duration) Step {
	s.Timeout = faults.Duration(d)
	return s
}

// Conditions.

func outboxRows(status string, n int) Cond {
	return Cond{Rows: &Rows{Table: "outbox", Status: status, N: n}}
}

func inboxRows(status string, n int) Cond {
	return Cond{Rows: &Rows{Table: "inbox", Status: status, N: n}}
}

func ledger(n int) Cond         { return Cond{Ledger: n} }
func killed(pod string) Cond    { return Cond{Killed: pod} }
func exitedPod(pod string) Cond { return Cond{Exited: pod} }
func traffic(link string, m world.Message) Cond {
	return Cond{Traffic: &TrafficCond{Link: link, Message: string(m)}}
}
func anyOf(cs ...Cond) Cond    { return Cond{Any: cs} }
func allOf(cs ...Cond) Cond    { return Cond{All: cs} }
func peekSkipped(n int) Cond   { return Cond{PeekSkips: n} }
func copiesSeen(n int) Cond    { return Cond{Copies: n} }
func eventOf(name string) Cond { return Cond{Event: &EventCond{Name: name}} }

// PodEvent holds once pod (or any pod of a role, "relay-") logged n
// events called name.
func PodEvent(name, pod string, n int) Cond {
	return Cond{Event: &EventCond{Name: name, Pod: pod, N: n}}
}

// eventWith: an event whose attribute key has value.
func eventWith(name, key, value string) Cond {
	return Cond{Event: &EventCond{Name: name, Attrs: map[string]string{key: value}}}
}

// Faults.

// Kill SIGKILLs a pod at its kill-point.
func Kill(point string) faults.Spec { return faults.Spec{Kind: faults.KindKillPoint, Point: point} }
func fail(point string) faults.Spec { return faults.Spec{Kind: faults.KindFailpoint, Point: point} }
func clockBy(d time.Duration) faults.Spec {
	return faults.Spec{Kind: faults.KindClock, By: faults.Duration(d)}
}

// ClockAt sets the pods' clock to at (Seoul time).
func ClockAt(at string) faults.Spec { return faults.Spec{Kind: faults.KindClock, At: at} }
func vendorMode(m fakevendor.Mode, msg int64, times int) faults.Spec {
	return faults.Spec{Kind: faults.KindVendor, Mode: string(m), Msg: msg, Times: times}
}
func linkDown(link string) faults.Spec { return faults.Spec{Kind: faults.KindDown, Link: link} }
func latency(link string, d world.Direction, delay time.Duration) faults.Spec {
	return faults.Spec{Kind: faults.KindLatency, Link: link, Direction: string(d), Delay: faults.Duration(delay)}
}
func stall(link string, d world.Direction) faults.Spec {
	return faults.Spec{Kind: faults.KindStall, Link: link, Direction: string(d)}
}
func fs(specs ...faults.Spec) []faults.Spec { return specs }
func poison(what string) faults.Spec        { return faults.Spec{Kind: faults.KindPoison, Poison: what} }

// Rules.

var allOnce = checker.Rule{Rule: "all-once"}

func lost(n int) checker.Rule                { return checker.Rule{Rule: "lost", N: n} }
func alerts(kind string, n int) checker.Rule { return checker.Rule{Rule: "alerts", Kind: kind, N: n} }
func handsets(n int) checker.Rule            { return checker.Rule{Rule: "ledger", N: n} }
func errorDelivered(n int) checker.Rule      { return checker.Rule{Rule: "error-delivered", N: n} }
func copies(n int) checker.Rule              { return checker.Rule{Rule: "copies", N: n} }
func peekSkips(n int) checker.Rule           { return checker.Rule{Rule: "peek-skips", N: n} }
func vendorCalls(msg int64, n int) checker.Rule {
	return checker.Rule{Rule: "vendor-calls", Msg: msg, N: n}
}
func rules(rs ...checker.Rule) []checker.Rule { return rs }

// GradeRenewalOnly is the kinds of a workload of grade renewals alone.
var GradeRenewalOnly = []notification.Kind{notification.GradeRenewal}
