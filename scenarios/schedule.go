package scenarios

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/outboxchaos/outboxchaos/fakevendor"
	"github.com/outboxchaos/outboxchaos/faults"
	"github.com/outboxchaos/outboxchaos/system/clock"
	"github.com/outboxchaos/outboxchaos/system/killpoint"
	"github.com/outboxchaos/outboxchaos/system/notification"
)

// Draw is the source of choices for a random schedule: rapid's *rapid.T in
// the property test, a seeded math/rand in reports.
type Draw interface {
	// Int returns an integer in [lo, hi]; label names the choice.
	Int(label string, lo, hi int) int
}

// FaultEvent is one fault of a schedule.
type FaultEvent struct {
	Kind   string        `json:"kind"`            // killpoint | failpoint | vendor | latency | down
	Target string        `json:"target"`          // pod role, proxy name, or vendor mode
	Point  string        `json:"point,omitempty"` // kill-point / failpoint name
	Hit    int           `json:"hit,omitempty"`   // on the Nth hit
	Msg    int           `json:"msg,omitempty"`   // vendor rule: outbox id
	Times  int           `json:"times,omitempty"` // vendor rule: how often
	At     time.Duration `json:"at,omitempty"`    // network fault: offset after the pipeline starts
	For    time.Duration `json:"for,omitempty"`   // network fault: how long
}

func (f FaultEvent) String() string {
	switch f.Kind {
	case "killpoint", "failpoint":
		return fmt.Sprintf("%s %s:%d in %s", f.Kind, f.Point, f.Hit, f.Target)
	case "clock":
		return "relay clock +1 day"
	case "vendor":
		return fmt.Sprintf("vendor %s for %s ×%d", f.Target, mid(int64(f.Msg)), f.Times)
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
}

func (s Schedule) String() string {
	var ev []string
	for _, e := range s.Events {
		ev = append(ev, e.String())
	}
	var kinds []string
	for _, k := range s.Kinds {
		kinds = append(kinds, string(k))
	}
	return fmt.Sprintf("%d×[%s] jobs=%d relays=%d drain=%v workers=%d start=%s faults=[%s]",
		s.PerKind, strings.Join(kinds, ","), s.JobRuns, s.Relays, s.Drain, s.Workers, s.Start, strings.Join(ev, "; "))
}

var (
	starts     = []string{"10:00:00", "10:00:00", "20:39:58", "20:49:58"}
	relayKills = []string{killpoint.RelayAfterClaim, killpoint.RelayAfterPublish, killpoint.RelayAfterConfirm}
	workerKill = []string{killpoint.WorkerBeforeClaim, killpoint.WorkerAfterClaim, killpoint.WorkerAfterSend, killpoint.WorkerAfterResult}
	failpoints = []string{killpoint.FailResultUpdate, killpoint.FailClaimResponse}
	modes      = []fakevendor.Mode{fakevendor.AcceptHang, fakevendor.Hang, fakevendor.Accept5xx, fakevendor.Fail5xx,
		fakevendor.Status401, fakevendor.Status403, fakevendor.Status429, fakevendor.TokenFail, fakevendor.Reset, fakevendor.AcceptReset}
	links = []string{"postgres", "rabbitmq-relay", "rabbitmq-worker", "vendor"}
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
		switch d.Int("fault kind", 0, 5) {
		case 0:
			f = FaultEvent{Kind: "killpoint", Target: "relay", Point: relayKills[d.Int("relay point", 0, len(relayKills)-1)], Hit: d.Int("hit", 1, 2)}
		case 1:
			f = FaultEvent{Kind: "killpoint", Target: "worker", Point: workerKill[d.Int("worker point", 0, len(workerKill)-1)], Hit: d.Int("hit", 1, total)}
		case 2:
			f = FaultEvent{Kind: "failpoint", Target: "worker", Point: failpoints[d.Int("failpoint", 0, len(failpoints)-1)], Hit: d.Int("hit", 1, total)}
		case 3:
			f = FaultEvent{Kind: "vendor", Target: string(modes[d.Int("mode", 0, len(modes)-1)]), Msg: d.Int("msg", 1, total), Times: d.Int("times", 1, 3)}
		case 4:
			f = FaultEvent{Kind: "down", Target: links[d.Int("link", 0, len(links)-1)],
				At: time.Duration(d.Int("at ms", 0, 1500)) * time.Millisecond, For: time.Duration(d.Int("for ms", 100, 800)) * time.Millisecond}
		case 5:
			f = FaultEvent{Kind: "latency", Target: links[d.Int("link", 0, len(links)-1)],
				At: time.Duration(d.Int("at ms", 0, 1500)) * time.Millisecond, For: time.Duration(d.Int("for ms", 200, 1500)) * time.Millisecond}
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
	return s
}

// Scenario turns the schedule into a runnable scenario. Killed pods are
// restarted as a deployment would; faults that never fire are allowed.
func (s Schedule) Scenario(name string) *Scenario {
	start := s.Start
	return &Scenario{
		Name: name, Row: "random", PerKind: s.PerKind, Kinds: s.Kinds, AllowUnfired: true,
		Description: s.String(),
		Fault:       fmt.Sprintf("%d random faults", len(s.Events)),
		Outcome:     "nothing twice, nothing lost silently, nothing unexpected, nothing stuck",
		Start: func(now time.Time) time.Time {
			var h, m, sec int
			_, _ = fmt.Sscanf(start, "%d:%d:%d", &h, &m, &sec)
			return clock.At(now, h, m).Add(time.Duration(sec) * time.Second)
		},
		Drive: func(ctx context.Context, e *Env) error { return s.drive(ctx, e) },
	}
}

func (s Schedule) drive(ctx context.Context, e *Env) error {
	opts := map[string][]PodOption{}
	var net []FaultEvent
	var relayClock []PodOption
	jobCrash := false
	for _, f := range s.Events {
		switch f.Kind {
		case "vendor":
			rule := fakevendor.Rule{RefKey: mid(int64(f.Msg)), Mode: fakevendor.Mode(f.Target), Times: f.Times}
			if rule.Mode == fakevendor.TokenFail {
				rule.RefKey = ""
			}
			if err := e.Vendor.AddRule(rule); err != nil {
				return err
			}
			e.Fault("vendor", f.Target, true, f.String())
		case "killpoint":
			if f.Target == "job" {
				jobCrash = true
				continue
			}
			if len(opts[f.Target]) == 0 {
				opts[f.Target] = append(opts[f.Target], Killpoint(fmt.Sprintf("%s:%d", f.Point, f.Hit)))
			}
		case "failpoint":
			opts[f.Target] = append(opts[f.Target], Failpoint(fmt.Sprintf("%s:%d", f.Point, f.Hit)))
		case "clock":
			relayClock = append(relayClock, WithClock(clock.NewVirtual(nextDay(e.Day, 10, 0), 1).Setting()))
			e.Fault("clock", "relay", true, "+1 day: past every scheduled date")
		default:
			net = append(net, f)
		}
	}
	// The batch job, possibly crashing before its commit, then re-run.
	for i := 0; i < s.JobRuns; i++ {
		if i == 0 && jobCrash {
			p, err := e.Start(ctx, "job", WithArgs("--kinds", e.Scenario.kindsArg()), Killpoint(killpoint.JobBeforeCommit))
			if err != nil {
				return err
			}
			if err := e.WaitExit(ctx, p, 60*time.Second); err != nil {
				return err
			}
			_, hit := p.Killpoint()
			e.Fault("kill-point", p.Name(), hit, killpoint.JobBeforeCommit)
		}
		if err := e.Enqueue(ctx); err != nil {
			return err
		}
	}
	start := func(role string, n int) error {
		for i := 0; i < n; i++ {
			var o []PodOption
			if i == 0 {
				o = opts[role]
			}
			if role == "relay" {
				o = append(append([]PodOption(nil), o...), relayClock...)
				if s.Drain {
					o = append(o, WithEnv("OUTBOXCHAOS_RELAY_DRAIN=true", "OUTBOXCHAOS_BATCH_SIZE=3"))
				}
			}
			p, err := e.Start(ctx, role, o...)
			if err != nil {
				return err
			}
			e.Supervise(p)
		}
		return nil
	}
	if err := start("worker", s.Workers); err != nil {
		return err
	}
	if err := start("relay", s.Relays); err != nil {
		return err
	}
	if err := start("cleanup", 1); err != nil {
		return err
	}
	// Network faults on the schedule's own time axis.
	sort.Slice(net, func(i, j int) bool { return net[i].At < net[j].At })
	t0 := time.Now()
	var wg sync.WaitGroup
	var mu sync.Mutex
	var firstErr error
	for _, f := range net {
		wg.Add(1)
		go func(f FaultEvent) {
			defer wg.Done()
			if err := e.netFault(ctx, t0, f); err != nil {
				mu.Lock()
				if firstErr == nil {
					firstErr = err
				}
				mu.Unlock()
			}
		}(f)
	}
	wg.Wait()
	return firstErr
}

func (e *Env) proxy(name string) *faults.Proxy {
	for _, p := range []*faults.Proxy{e.PG, e.AMQPRelay, e.AMQPWorker, e.VendorLink} {
		if p.Name() == name {
			return p
		}
	}
	return nil
}

func (e *Env) netFault(ctx context.Context, t0 time.Time, f FaultEvent) error {
	p := e.proxy(f.Target)
	if p == nil {
		return fmt.Errorf("no link %q", f.Target)
	}
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(time.Until(t0.Add(f.At))):
	}
	var fault *faults.Fault
	var err error
	switch f.Kind {
	case "down":
		fault, err = p.Down()
	case "latency":
		fault, err = p.Latency(ctx, faults.Downstream, 700*time.Millisecond, 0)
	default:
		return fmt.Errorf("unknown network fault %q", f.Kind)
	}
	if err != nil {
		// Two overlapping downs on one link: the first one covers it.
		e.Logf("harness", "skip %s: %v", f, err)
		return nil
	}
	select {
	case <-ctx.Done():
	case <-time.After(f.For):
	}
	rerr := fault.Remove()
	e.NetFault(fault)
	return rerr
}
