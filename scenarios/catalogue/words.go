package catalogue

import (
	"time"

	"github.com/outboxchaos/outboxchaos/checker"
	"github.com/outboxchaos/outboxchaos/fakevendor"
	"github.com/outboxchaos/outboxchaos/faults"
	"github.com/outboxchaos/outboxchaos/rig"
	"github.com/outboxchaos/outboxchaos/scenarios/scenario"
	"github.com/outboxchaos/outboxchaos/system/notification"
)

// The words the catalogue is written in: short constructors for steps,
// conditions, faults and rules, so that each entry reads as its row.

// Steps.

// Enqueue runs the batch job once, seeding the scenario's members.
func Enqueue() scenario.Step              { return scenario.Step{Do: "enqueue"} }
func enqueueN(perKind int) scenario.Step  { return scenario.Step{Do: "enqueue", PerKind: perKind} }
func start(roles ...string) scenario.Step { return scenario.Step{Do: "start", Roles: roles} }
func pipeline() scenario.Step             { return start("relay", "worker", "cleanup") }

// Await waits until c holds.
func Await(c scenario.Cond) scenario.Step            { return scenario.Step{Do: "await", Cond: &c} }
func assert(c scenario.Cond) scenario.Step           { return scenario.Step{Do: "assert", Cond: &c} }
func restart(pod string) scenario.Step               { return scenario.Step{Do: "restart", Pod: pod} }
func stop(pod string) scenario.Step                  { return scenario.Step{Do: "stop", Pod: pod} }
func note(s scenario.Step, why string) scenario.Step { s.Note = why; return s }

// StartWith starts one pod of role with pod faults armed in it.
func StartWith(role string, fs ...faults.Spec) scenario.Step {
	return scenario.Step{Do: "start", Roles: []string{role}, Faults: fs}
}

// startEnv starts one pod of role with extra settings (KEY=VALUE).
func startEnv(role string, env ...string) scenario.Step {
	return scenario.Step{Do: "start", Roles: []string{role}, Env: env}
}

// Inject puts faults in place for the rest of the run.
func Inject(fs ...faults.Spec) scenario.Step { return scenario.Step{Do: "inject", Faults: fs} }

// recoverFaults takes away faults an inject step put in place.
func recoverFaults(fs ...faults.Spec) scenario.Step { return scenario.Step{Do: "recover", Faults: fs} }

// during holds fs in place while steps run and until c holds.
func during(fs []faults.Spec, c scenario.Cond, steps ...scenario.Step) scenario.Step {
	return scenario.Step{Do: "during", Faults: fs, Cond: &c, Steps: steps}
}

// within sets how long step s may wait for its condition.
func within(s scenario.Step, d time.Duration) scenario.Step {
	s.Timeout = faults.Duration(d)
	return s
}

// Conditions.

func outboxRows(status string, n int) scenario.Cond {
	return scenario.Cond{Rows: &scenario.Rows{Table: "outbox", Status: status, N: n}}
}

func inboxRows(status string, n int) scenario.Cond {
	return scenario.Cond{Rows: &scenario.Rows{Table: "inbox", Status: status, N: n}}
}

func ledger(n int) scenario.Cond         { return scenario.Cond{Ledger: n} }
func killed(pod string) scenario.Cond    { return scenario.Cond{Killed: pod} }
func exitedPod(pod string) scenario.Cond { return scenario.Cond{Exited: pod} }
func traffic(link string, m rig.Message) scenario.Cond {
	return scenario.Cond{Traffic: &scenario.TrafficCond{Link: link, Message: string(m)}}
}
func anyOf(cs ...scenario.Cond) scenario.Cond { return scenario.Cond{Any: cs} }
func allOf(cs ...scenario.Cond) scenario.Cond { return scenario.Cond{All: cs} }
func peekSkipped(n int) scenario.Cond         { return scenario.Cond{PeekSkips: n} }
func copiesSeen(n int) scenario.Cond          { return scenario.Cond{Copies: n} }
func eventOf(name string) scenario.Cond       { return scenario.Cond{Event: &scenario.EventCond{Name: name}} }

// PodEvent holds once pod (or any pod of a role, "relay-") logged n
// events called name.
func PodEvent(name, pod string, n int) scenario.Cond {
	return scenario.Cond{Event: &scenario.EventCond{Name: name, Pod: pod, N: n}}
}

// eventWith: an event whose attribute key has value.
func eventWith(name, key, value string) scenario.Cond {
	return scenario.Cond{Event: &scenario.EventCond{Name: name, Attrs: map[string]string{key: value}}}
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
func latency(link string, d rig.Direction, delay time.Duration) faults.Spec {
	return faults.Spec{Kind: faults.KindLatency, Link: link, Direction: string(d), Delay: faults.Duration(delay)}
}
func stall(link string, d rig.Direction) faults.Spec {
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
