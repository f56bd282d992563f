package explore

import (
	"bufio"
	"context"
	"fmt"
	"hash/fnv"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/outboxchaos/outboxchaos/fakevendor"
	"github.com/outboxchaos/outboxchaos/faults"
	"github.com/outboxchaos/outboxchaos/scenarios"
	"github.com/outboxchaos/outboxchaos/scenarios/catalogue"
	"github.com/outboxchaos/outboxchaos/scenarios/scenario"
	"github.com/outboxchaos/outboxchaos/system/crashpoint"
	"github.com/outboxchaos/outboxchaos/system/killpoint"
	"github.com/outboxchaos/outboxchaos/system/notification"
)

// Crash-point enumeration, as CrashMonkey and ALICE do for file systems:
// a discovery run of a small workload lists every automatic crash point
// (system/crashpoint) each process reaches and how often; then each
// (process, step, side, Nth hit) up to a bound is one run that kills the
// process there, replaces it by a new pod under a new instance name, lets
// the pipeline settle and has the checker judge the contract.

// CrashProcesses are the pipeline's processes whose crash points are
// enumerated, in the order a run starts them.
var CrashProcesses = []string{"migrate", "job", "worker", "relay", "cleanup", "reconciler"}

// CrashWorkload is a small workload to enumerate the crash points of:
// notifications, and faults that send them down a path the happy path
// never takes (so its steps are crash points too).
type CrashWorkload struct {
	Name string
	Desc string
	// PerKind notifications of each of Kinds (nil: every kind).
	Kinds   []notification.Kind
	PerKind int
	// Inject are live faults in place for the whole run; Arm are pod
	// faults armed in every pod of a role (a replacement keeps none).
	Inject []faults.Spec
	Arm    map[string][]faults.Spec
	// Config sets settings over the compressed configuration; Reconciler
	// runs a reconciler beside the pipeline.
	Config     map[string]string
	Reconciler bool
	// Migrate: the schema migration's points are explored too (they do
	// not depend on the workload, so one workload has them).
	Migrate bool
}

// roles are the long-running processes of the workload, in start order.
func (w CrashWorkload) roles() []string {
	r := []string{"worker", "relay", "cleanup"}
	if w.Reconciler {
		r = append(r, "reconciler")
	}
	return r
}

// CrashWorkloads: one message, one of each kind, then one message down
// each loss path: an unknown vendor outcome, a vendor that rejects it
// until it is parked, a result write that fails (cleanup's sweep), an
// unknown outcome a re-sending reconciler settles, a claim whose release
// is lost, an unknown outcome the report shows received, one the report
// never answers, a re-send whose outcome is unknown again, an anniversary
// lost on purpose, a publish the broker returns, a relay that first runs
// after its date; and a relay draining a small backlog batch after batch.
var CrashWorkloads = []CrashWorkload{
	{Name: "one", Desc: "one notification", Kinds: catalogue.GradeRenewalOnly, PerKind: 1, Migrate: true},
	{Name: "each-kind", Desc: "one notification of each kind", PerKind: 1},
	{Name: "unknown", Desc: "one notification; the vendor answers 5xx (an unknown outcome: ERROR + alert)", Kinds: catalogue.GradeRenewalOnly, PerKind: 1,
		Inject: []faults.Spec{{Kind: faults.KindVendor, Mode: string(fakevendor.Fail5xx), Msg: 1}}},
	{Name: "rejected", Desc: "one notification; the vendor answers 401 every time (retried, then parked + alert)", Kinds: catalogue.GradeRenewalOnly, PerKind: 1,
		Inject: []faults.Spec{{Kind: faults.KindVendor, Mode: string(fakevendor.Status401), Msg: 1}}},
	{Name: "stuck", Desc: "one notification; the first worker's result write fails (alert; cleanup → ERROR + alert)", Kinds: catalogue.GradeRenewalOnly, PerKind: 1,
		Arm: map[string][]faults.Spec{"worker": {{Kind: faults.KindFailpoint, Point: killpoint.FailResultUpdate}}}},
	{Name: "reconcile", Desc: "one notification; the vendor answers 5xx once; a re-sending reconciler settles it (re-sent once)", Kinds: catalogue.GradeRenewalOnly, PerKind: 1,
		Inject: []faults.Spec{{Kind: faults.KindVendor, Mode: string(fakevendor.Fail5xx), Msg: 1, Times: 1}},
		Config: map[string]string{"reconcile-resend": "true"}, Reconciler: true},
	{Name: "release-lost", Desc: "one notification; the vendor answers 429 once, and the worker's DELETE of its claim commits but its answer is lost (requeued + alert)", Kinds: catalogue.GradeRenewalOnly, PerKind: 1,
		Inject: []faults.Spec{{Kind: faults.KindVendor, Mode: string(fakevendor.Status429), Msg: 1, Times: 1}},
		Arm:    map[string][]faults.Spec{"worker": {{Kind: faults.KindFailpoint, Point: killpoint.FailReleaseResponse}}}},
	{Name: "settled", Desc: "one notification; the vendor records it and answers 500 once (ERROR + alert); a re-sending reconciler finds it received and settles it SENT (alert)", Kinds: catalogue.GradeRenewalOnly, PerKind: 1,
		Inject: []faults.Spec{{Kind: faults.KindVendor, Mode: string(fakevendor.Accept5xx), Msg: 1, Times: 1}},
		Config: map[string]string{"reconcile-resend": "true"}, Reconciler: true},
	{Name: "resend-unknown", Desc: "one notification; the vendor answers 503 to the send and to the reconciler's re-send (ERROR + alert, twice), then takes the second re-send", Kinds: catalogue.GradeRenewalOnly, PerKind: 1,
		Inject: []faults.Spec{{Kind: faults.KindVendor, Mode: string(fakevendor.Fail5xx), Msg: 1, Times: 2}},
		Config: map[string]string{"reconcile-resend": "true"}, Reconciler: true},
	{Name: "gives-up", Desc: "one notification; the vendor never answers it and its report answers 503 to every lookup: the reconciler stops after its tries (alert)", Kinds: catalogue.GradeRenewalOnly, PerKind: 1,
		Inject: []faults.Spec{{Kind: faults.KindVendor, Mode: string(fakevendor.Hang), Msg: 1, Times: 1}, {Kind: faults.KindVendor, Mode: string(fakevendor.Lookup5xx), Msg: 1}},
		Config: map[string]string{"reconcile-resend": "true"}, Reconciler: true},
	{Name: "attempts", Desc: "one notification; the relay's first publish goes to a key nothing is bound to (returned: a failed attempt, alerted at the first)", Kinds: catalogue.GradeRenewalOnly, PerKind: 1,
		Arm:    map[string][]faults.Spec{"relay": {{Kind: faults.KindFailpoint, Point: killpoint.FailMisroute}}},
		Config: map[string]string{"alert-attempt": "1"}},
	{Name: "anniversary-lost", Desc: "two anniversaries; the outbox insert of the first fails after its coupon was issued (lost on purpose + alert)",
		Kinds: []notification.Kind{notification.AnniversaryCoupon}, PerKind: 2,
		Arm: map[string][]faults.Spec{"job": {{Kind: faults.KindFailpoint, Point: killpoint.FailAnniversaryOutbox}}}},
	{Name: "drain", Desc: "two notifications of each kind; the relay drains the backlog in batches of 2, claiming the next while the last awaits its confirms", PerKind: 2,
		Config: map[string]string{"relay-drain": "true", "batch-size": "2"}},
	{Name: "expired", Desc: "one notification; the relay first runs the next day (EXPIRED + alert)", Kinds: catalogue.GradeRenewalOnly, PerKind: 1,
		Arm: map[string][]faults.Spec{"relay": {{Kind: faults.KindClock, At: "+1d 10:00"}}}},
}

// LookupCrashWorkload returns the workload called name.
func LookupCrashWorkload(name string) (CrashWorkload, bool) {
	for _, w := range CrashWorkloads {
		if w.Name == name {
			return w, true
		}
	}
	return CrashWorkload{}, false
}

// CrashTarget is one crash point of one process.
type CrashTarget struct {
	Process string
	Point   crashpoint.Point
}

// String is "<process>:<step>:<side>:<hit>", what --only takes.
func (t CrashTarget) String() string { return t.Process + ":" + t.Point.String() }

// ParseCrashTarget reads "<process>:<kind>:<label>:<side>:<hit>".
func ParseCrashTarget(s string) (CrashTarget, error) {
	proc, rest, ok := strings.Cut(strings.TrimSpace(s), ":")
	if !ok || !contains(CrashProcesses, proc) {
		return CrashTarget{}, fmt.Errorf("crash target %q: want <process>:<kind>:<label>:<side>:<hit>, process one of %s",
			s, strings.Join(CrashProcesses, ", "))
	}
	p, err := crashpoint.ParsePoint(rest)
	if err != nil {
		return CrashTarget{}, err
	}
	return CrashTarget{Process: proc, Point: p}, nil
}

func contains(xs []string, x string) bool {
	for _, v := range xs {
		if v == x {
			return true
		}
	}
	return false
}

// base is the workload's scenario without steps.
func (w CrashWorkload) base(name, desc string) *scenario.Scenario {
	return &scenario.Scenario{Name: name, Row: "crash", Description: w.Desc + "; " + desc, PerKind: w.PerKind, Kinds: w.Kinds,
		Fault: "none", Outcome: "the contract holds", AllowUnfired: true, Config: w.Config}
}

// DiscoveryScenario runs the workload once with every process tracing the
// crash points it reaches into dir/<process>.trace.
func (w CrashWorkload) DiscoveryScenario(dir string) *scenario.Scenario {
	s := w.base("crashpoints-discover-"+w.Name, "workload "+w.Name+", every process listing the crash points it reaches")
	s.SelfMigrate = w.Migrate
	env := func(proc string) []string {
		return []string{crashpoint.TraceEnvVar + "=" + filepath.Join(dir, proc+".trace")}
	}
	s.Steps = w.inject()
	if w.Migrate {
		s.Steps = append(s.Steps, scenario.Step{Do: "start", Roles: []string{"migrate"}, Env: env("migrate")},
			scenario.Step{Do: "await", Cond: &scenario.Cond{Succeeded: "migrate-1"}})
	}
	s.Steps = append(s.Steps, scenario.Step{Do: "start", Roles: []string{"job"}, Env: env("job"), Faults: w.Arm["job"]},
		scenario.Step{Do: "await", Cond: &scenario.Cond{Succeeded: "job-1"}})
	for _, role := range w.roles() {
		s.Steps = append(s.Steps, scenario.Step{Do: "start", Roles: []string{role}, Env: env(role), Faults: w.Arm[role], Supervise: true})
	}
	return s
}

// inject is the step that puts the workload's live faults in place.
func (w CrashWorkload) inject() []scenario.Step {
	if len(w.Inject) == 0 {
		return nil
	}
	return []scenario.Step{{Do: "inject", Faults: w.Inject}}
}

// CrashScenario kills t.Process at t.Point once, replaces it by a new pod
// under a new name and lets the pipeline settle.
func (w CrashWorkload) CrashScenario(t CrashTarget) *scenario.Scenario {
	name := "crashpoint-" + w.Name + "-" + strings.NewReplacer(":", "-", "/", "-").Replace(t.String())
	s := w.base(name, fmt.Sprintf("workload %s; %s dies at crash point %s and is replaced under a new name", w.Name, t.Process, t.Point))
	s.Fault = "crash-point " + t.Point.String() + " (SIGKILL) in " + t.Process + "-1"
	// AllowUnfired (from base): a hit discovery saw may not come again.
	f := []faults.Spec{{Kind: faults.KindCrashPoint, Point: t.Point.Name(), Hit: t.Point.Hit}}
	arm := func(role string) []faults.Spec {
		fs := append([]faults.Spec(nil), w.Arm[role]...)
		if role == t.Process {
			fs = append(fs, f...)
		}
		return fs
	}
	s.Steps = w.inject()
	// The schema migration (when it is the target; otherwise the runner
	// migrates) and the batch job run to completion first; a crashed one
	// is replaced and its replacement run to completion.
	first := []string{"job"}
	if t.Process == "migrate" {
		s.SelfMigrate, first = true, []string{"migrate", "job"}
	}
	for _, role := range first {
		s.Steps = append(s.Steps, scenario.Step{Do: "start", Roles: []string{role}, Faults: arm(role)},
			scenario.Step{Do: "replace", Pod: role + "-1"})
	}
	for _, role := range w.roles() {
		// The other processes are supervised: one that fails at start-up
		// (a queue declared by two processes at once) is restarted, as a
		// deployment would.
		s.Steps = append(s.Steps, scenario.Step{Do: "start", Roles: []string{role}, Faults: arm(role), Supervise: role != t.Process})
	}
	if t.Process != "job" && t.Process != "migrate" {
		s.Steps = append(s.Steps, scenario.Step{Do: "replace", Pod: t.Process + "-1"})
	}
	return s
}

// Discovered is what a discovery run saw: per process, each point name
// ("<step>:<side>") and how many hits of it (up to crashpoint.TraceBound).
type Discovered map[string]map[string]int

// readTraces reads dir/<process>.trace of every process.
func readTraces(dir string) (Discovered, error) {
	d := Discovered{}
	for _, proc := range CrashProcesses {
		d[proc] = map[string]int{}
		f, err := os.Open(filepath.Join(dir, proc+".trace"))
		if os.IsNotExist(err) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("read crash-point trace: %w", err)
		}
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			name, n, ok := strings.Cut(sc.Text(), " ")
			hit, err := strconv.Atoi(n)
			if !ok || err != nil {
				continue
			}
			d[proc][name] = max(d[proc][name], hit)
		}
		f.Close()
		if err := sc.Err(); err != nil {
			return nil, fmt.Errorf("read crash-point trace: %w", err)
		}
	}
	return d, nil
}

// Targets lists every (process, point, hit ≤ bound) discovery saw, sorted.
func (d Discovered) Targets(bound int) []CrashTarget {
	var out []CrashTarget
	for proc, points := range d {
		for name, hits := range points {
			i := strings.LastIndexByte(name, ':')
			step, side := name[:i], crashpoint.Side(name[i+1:])
			for h := 1; h <= min(hits, bound); h++ {
				out = append(out, CrashTarget{Process: proc, Point: crashpoint.Point{Step: step, Side: side, Hit: h}})
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].String() < out[j].String() })
	return out
}

// Discover runs the workload's discovery scenario and returns the points
// it reached. The run itself must pass: it is the happy path.
func Discover(ctx context.Context, w CrashWorkload, o scenarios.Options) (Discovered, scenarios.Result, error) {
	var d Discovered
	res, err := discover(ctx, w, o, func(dir string) (err error) {
		d, err = readTraces(dir)
		return err
	})
	return d, res, err
}

// discover runs the workload's discovery scenario in a temporary folder
// of traces and hands the folder to read before removing it.
func discover(ctx context.Context, w CrashWorkload, o scenarios.Options, read func(dir string) error) (scenarios.Result, error) {
	dir, err := os.MkdirTemp("", "outboxchaos-crashpoints-")
	if err != nil {
		return scenarios.Result{}, fmt.Errorf("crash-point discovery: %w", err)
	}
	defer os.RemoveAll(dir)
	res := scenarios.Run(ctx, w.DiscoveryScenario(dir), o)
	if !res.Pass() {
		return res, fmt.Errorf("crash-point discovery of workload %s failed: %v %s", w.Name, res.Err, res.Verdict)
	}
	return res, read(dir)
}

// Sample picks k targets deterministically for seed: the k whose hash with
// the seed is smallest. A target's rank depends on its name and the seed
// only, so a point one discovery saw and another missed changes the sample
// by itself alone. k ≤ 0 keeps them all.
func Sample(ts []CrashTarget, k int, seed int64) []CrashTarget {
	if k <= 0 || k >= len(ts) {
		return ts
	}
	rank := func(t CrashTarget) uint64 {
		h := fnv.New64a()
		fmt.Fprintf(h, "%d/%s", seed, t)
		return h.Sum64()
	}
	out := append([]CrashTarget(nil), ts...)
	sort.Slice(out, func(i, j int) bool { return rank(out[i]) < rank(out[j]) })
	out = out[:k]
	sort.Slice(out, func(i, j int) bool { return out[i].String() < out[j].String() })
	return out
}

// CrashOutcome is one target's run.
type CrashOutcome struct {
	Workload string
	Target   CrashTarget
	Result   scenarios.Result
	// Fired: the process died at the point (else the hit never came).
	Fired bool
}

// Violation reports whether the run broke the contract. A run that was
// not judged (NotJudged) is no violation: it explored nothing.
func (c CrashOutcome) Violation() bool { return c.Result.Outcome() == scenarios.OutcomeFail }

// NotJudged reports whether the run could not be judged (ERROR: the
// harness or its infrastructure failed, or it was interrupted).
func (c CrashOutcome) NotJudged() bool { return c.Result.Outcome() == scenarios.OutcomeError }

// Replay is the one-line command that runs the target again.
func (c CrashOutcome) Replay() string {
	bug := ""
	if c.Result.Record.Bug != "" {
		bug = " --bug " + c.Result.Record.Bug
	}
	return fmt.Sprintf("bin/outboxchaos crashpoints --workload %s --only '%s' --seed %d%s", c.Workload, c.Target, c.Result.Seed, bug)
}

// Explore runs each target with up to parallel runs at once, calling
// progress after each (from one goroutine at a time).
func Explore(ctx context.Context, w CrashWorkload, ts []CrashTarget, o scenarios.Options, parallel int, progress func(CrashOutcome)) []CrashOutcome {
	out := make([]CrashOutcome, len(ts))
	sem := make(chan struct{}, max(parallel, 1))
	var wg sync.WaitGroup
	var mu sync.Mutex
	for i, t := range ts {
		if ctx.Err() != nil {
			break
		}
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			oo := o
			oo.Seed = o.Seed + int64(i)
			res := scenarios.Run(ctx, w.CrashScenario(t), oo)
			c := CrashOutcome{Workload: w.Name, Target: t, Result: res}
			for _, f := range res.Faults {
				c.Fired = c.Fired || (f.Kind == faults.KindCrashPoint && f.Fired)
			}
			out[i] = c
			mu.Lock()
			defer mu.Unlock()
			if progress != nil {
				progress(c)
			}
		}()
	}
	wg.Wait()
	return out
}
