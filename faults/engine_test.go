package faults

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/outboxchaos/outboxchaos/fakevendor"
	"github.com/outboxchaos/outboxchaos/system/killpoint"
)

// stubWorld is a World with nothing in it: the engine's bookkeeping needs
// none of it.
type stubWorld struct{}

func (stubWorld) Link(name string) (LinkHandle, error) { return nil, errors.New("no links") }
func (stubWorld) Vendor() *fakevendor.Server           { return nil }
func (stubWorld) Pods() []PodHandle                    { return nil }
func (stubWorld) Pod(name string) (PodHandle, error)   { return nil, errors.New("no pods") }
func (stubWorld) Now() time.Time                       { return time.Now() }
func (stubWorld) DB() *pgxpool.Pool                    { return nil }
func (stubWorld) Broker() Broker                       { return nil }
func (stubWorld) Logf(source, format string, a ...any) {}

// fakeFault counts its injections and recoveries and fires on demand.
type fakeFault struct {
	name                string
	injectErr           error
	injected, recovered int
	fires, blind        bool
}

func (f *fakeFault) Family() string { return "fake" }
func (f *fakeFault) Target() string { return f.name }
func (f *fakeFault) Inject(context.Context, World) error {
	f.injected++
	return f.injectErr
}
func (f *fakeFault) Recover(context.Context, World) error { f.recovered++; return nil }
func (f *fakeFault) Fired(World) (bool, string)           { return f.fires, "fake evidence" }
func (f *fakeFault) String() string                       { return "fake " + f.name }

type blindFault struct{ fakeFault }

func (*blindFault) PartlyBlind() {}

func records(e *Engine) map[string]bool {
	out := map[string]bool{}
	for _, r := range e.Records() {
		out[r.Target] = r.Fired
	}
	return out
}

// TestDuringAlwaysRecovers: a failing step between inject and recover
// leaves no fault in place, and the fault is recorded as not fired.
func TestDuringAlwaysRecovers(t *testing.T) {
	t.Parallel()
	e := NewEngine(stubWorld{}, time.Now())
	a, b := &fakeFault{name: "a", fires: true}, &fakeFault{name: "b", fires: true}
	err := e.During(context.Background(), []Fault{a, b}, true, func(context.Context) error { return errors.New("step failed") })
	if err == nil || !strings.Contains(err.Error(), "step failed") {
		t.Fatalf("want the step's error, got %v", err)
	}
	if a.recovered != 1 || b.recovered != 1 {
		t.Errorf("recovered a=%d b=%d times, want once each", a.recovered, b.recovered)
	}
	if got := records(e); got["a"] || got["b"] {
		t.Errorf("faults whose condition never came are recorded fired: %v", got)
	}
}

// TestDuringFiredNeedsConditionAndEvidence: with a condition, a fault fired
// only if the condition came and the fault was met (or cannot see itself).
func TestDuringFiredNeedsConditionAndEvidence(t *testing.T) {
	t.Parallel()
	e := NewEngine(stubWorld{}, time.Now())
	met, unmet, blind := &fakeFault{name: "met", fires: true}, &fakeFault{name: "unmet"}, &blindFault{fakeFault{name: "blind"}}
	if err := e.During(context.Background(), []Fault{met, unmet, blind}, true, func(context.Context) error { return nil }); err != nil {
		t.Fatal(err)
	}
	got := records(e)
	if !got["met"] || got["unmet"] || !got["blind"] {
		t.Errorf("fired = %v, want met and blind, not unmet", got)
	}
}

// TestInjectFailureIsRecordedAndNotRecovered: a fault that could not be
// put in place is in the ledger as not fired, and RecoverAll leaves it be.
func TestInjectFailureIsRecordedAndNotRecovered(t *testing.T) {
	t.Parallel()
	e := NewEngine(stubWorld{}, time.Now())
	bad := &fakeFault{name: "bad", fires: true, injectErr: errors.New("link already down")}
	good := &fakeFault{name: "good", fires: true}
	var ie *InjectError
	if err := e.Inject(context.Background(), bad); !errors.As(err, &ie) {
		t.Fatalf("want an InjectError, got %v", err)
	}
	if err := e.Inject(context.Background(), good); err != nil {
		t.Fatal(err)
	}
	if err := e.RecoverAll(context.Background()); err != nil {
		t.Fatal(err)
	}
	if bad.recovered != 0 || good.recovered != 1 {
		t.Errorf("recovered bad=%d good=%d, want 0 and 1", bad.recovered, good.recovered)
	}
	if got := records(e); got["bad"] || !got["good"] {
		t.Errorf("fired = %v, want good only", got)
	}
}

// TestSpecBuildRejectsBadInput: the errors a scenario author meets.
func TestSpecBuildRejectsBadInput(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		spec Spec
		want string
	}{
		{Spec{Kind: "meteor"}, `unknown fault kind "meteor"`},
		{Spec{Kind: "kill-point", Point: "nowhere"}, `unknown kill-point "nowhere"`},
		{Spec{Kind: "latency", Link: "vendor"}, "positive delay"},
		{Spec{Kind: "latency", Link: "vendor", Delay: Duration(time.Second), Direction: "sideways"}, "sideways"},
		{Spec{Kind: "vendor", Mode: "accept-hang"}, "needs msg"},
		{Spec{Kind: "vendor", Mode: "teapot", Msg: 1}, `unknown mode "teapot"`},
		{Spec{Kind: "clock"}, "exactly one of by and at"},
		{Spec{Kind: "clock", At: "+1d 25:00"}, "out of range"},
		{Spec{Kind: "sigterm"}, "needs pod"},
		{Spec{Kind: "hold-rows"}, "rows >= 1"},
	} {
		if _, err := c.spec.Build(); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: got %v, want an error containing %q", c.spec, err, c.want)
		}
	}
}

// deployWorld is a world that runs a deployment.
type deployWorld struct {
	stubWorld
	pods []string
}

func (w deployWorld) RollingRestart(_ context.Context, role string) ([]string, error) {
	return w.pods, nil
}

// TestRollingRestartAndVirtualLedger: a rolling restart needs a world
// that deploys, fires when it replaced a pod, and the ledger reads the
// engine's clock.
func TestRollingRestartAndVirtualLedger(t *testing.T) {
	t.Parallel()
	start := time.Date(2026, 3, 10, 7, 55, 0, 0, time.UTC)
	now := start
	for _, tc := range []struct {
		w     World
		fired bool
	}{{deployWorld{pods: []string{"worker-1"}}, true}, {deployWorld{}, false}, {stubWorld{}, false}} {
		e := NewEngine(tc.w, start)
		e.SetClock(func() time.Time { return now })
		f, err := Spec{Kind: "rolling-restart", Deployment: "worker"}.Build()
		if err != nil {
			t.Fatal(err)
		}
		now = start.Add(time.Hour)
		ierr := e.Inject(context.Background(), f)
		if _, ok := tc.w.(Deployer); ok != (ierr == nil) {
			t.Errorf("%T: inject error %v", tc.w, ierr)
		}
		now = start.Add(2 * time.Hour)
		_ = e.Recover(context.Background(), f)
		r := e.Records()[0]
		if r.Fired != tc.fired || r.Start != time.Hour || (ierr == nil && r.At != 2*time.Hour) {
			t.Errorf("%T: record %+v, want fired=%t from 1h to 2h", tc.w, r, tc.fired)
		}
	}
}

// TestMomentaryKinds: the kinds that act once and hold nothing are
// exactly these, none is armed in a pod, and their Recover does nothing;
// a run whose only open faults are these may settle and jump its clock.
func TestMomentaryKinds(t *testing.T) {
	t.Parallel()
	want := map[string]Spec{
		"resume":           {Kind: "resume", Pod: "worker-1"},
		"sigterm":          {Kind: "sigterm", Pod: "worker-1"},
		"kill":             {Kind: "kill", Pod: "worker-1"},
		"replay-parked":    {Kind: "replay-parked", Msg: 1},
		"withdraw-consent": {Kind: "withdraw-consent", Member: 1},
		"rolling-restart":  {Kind: "rolling-restart", Deployment: "worker"},
		"poison":           {Kind: "poison", Poison: PoisonNames()[0]},
	}
	for kind, spec := range want {
		f, err := spec.Build()
		if err != nil {
			t.Fatalf("%s: %v", kind, err)
		}
		if _, ok := f.(Momentary); !ok {
			t.Errorf("%s is not momentary", kind)
		}
		if _, ok := f.(PodFault); ok {
			t.Errorf("%s is momentary and armed in a pod", kind)
		}
		if err := f.Recover(context.Background(), nil); err != nil {
			t.Errorf("%s: Recover: %v", kind, err)
		}
	}
	for _, f := range []Spec{{Kind: "down", Link: "postgres"}, {Kind: "stall", Link: "postgres", Direction: "downstream"},
		{Kind: "unbind"}, {Kind: "hold-rows", Rows: 1}, {Kind: "pause-point", Point: "relay.after-claim", Hit: 1}} {
		b, err := f.Build()
		if err != nil {
			t.Fatalf("%s: %v", f.Kind, err)
		}
		if _, ok := b.(Momentary); ok {
			t.Errorf("%s holds something until recovered, yet is momentary", f.Kind)
		}
	}
}

// TestEveryPointHasAPhase: a kill-point, pause-point or failpoint reaches
// its point's phase, so a new point without one would be counted where the
// pipeline happened to log while it was armed.
func TestEveryPointHasAPhase(t *testing.T) {
	t.Parallel()
	for _, kind := range []string{"kill-point", "pause-point"} {
		for _, p := range killpoint.Names {
			f, err := Spec{Kind: kind, Point: p, Hit: 1}.Build()
			if err != nil {
				t.Fatalf("%s %s: %v", kind, p, err)
			}
			if r := ReachOf(f); len(r.Phases) != 1 || !slices.Contains(Phases, r.Phases[0]) || r.Windowed {
				t.Errorf("%s %s reaches %+v, want one phase", kind, p, r)
			}
		}
	}
	for _, p := range killpoint.FailNames {
		f, err := Spec{Kind: "failpoint", Point: p, Hit: 1}.Build()
		if err != nil {
			t.Fatalf("failpoint %s: %v", p, err)
		}
		if r := ReachOf(f); len(r.Phases) != 1 {
			t.Errorf("failpoint %s reaches %+v, want one phase", p, r)
		}
	}
}

// TestEveryKindSaysWhatItActsOn: every kind but the automatic crash point
// (armed in whichever pod reaches it) names the components it acts on, so
// an invariant that asks (claim-order) need not know the kinds; a new kind
// needs a line here.
func TestEveryKindSaysWhatItActsOn(t *testing.T) {
	t.Parallel()
	samples := map[string]Spec{
		KindKillPoint:       {Kind: KindKillPoint, Point: "relay.after-claim"},
		KindFailpoint:       {Kind: KindFailpoint, Point: killpoint.FailNames[0]},
		KindPausePoint:      {Kind: KindPausePoint, Point: "worker.after-send"},
		KindResume:          {Kind: KindResume, Pod: "worker-1"},
		KindClock:           {Kind: KindClock, By: Duration(time.Minute)},
		KindVendor:          {Kind: KindVendor, Mode: "5xx", Msg: 1},
		KindVendorWeather:   {Kind: KindVendorWeather, Weather: &fakevendor.Weather{Timeout: 0.1}},
		KindDown:            {Kind: KindDown, Link: "postgres-relay"},
		KindLatency:         {Kind: KindLatency, Link: "vendor", Delay: Duration(time.Second)},
		KindStall:           {Kind: KindStall, Link: "rabbitmq-worker"},
		KindSigterm:         {Kind: KindSigterm, Pod: "relay-2"},
		KindUnbind:          {Kind: KindUnbind},
		KindReplayParked:    {Kind: KindReplayParked, Msg: 1},
		KindHoldRows:        {Kind: KindHoldRows, Rows: 1},
		KindHoldMigration:   {Kind: KindHoldMigration},
		KindWithdrawConsent: {Kind: KindWithdrawConsent, Member: 1},
		KindHoldTable:       {Kind: KindHoldTable, Table: "outbox"},
		KindHoldInboxRow:    {Kind: KindHoldInboxRow, Msg: 1},
		KindCrash:           {Kind: KindCrash, Node: "postgres"},
		KindRestart:         {Kind: KindRestart, Node: "rabbitmq"},
		KindFreeze:          {Kind: KindFreeze, Node: "rabbitmq-2"},
		KindLeaderLoss:      {Kind: KindLeaderLoss},
		KindKill:            {Kind: KindKill, Pod: "worker-10"},
		KindRollingRestart:  {Kind: KindRollingRestart, Deployment: "worker"},
		KindPoison:          {Kind: KindPoison, Poison: PoisonNames()[0]},
	}
	for _, k := range Kinds() {
		kind := strings.SplitN(k, ":", 2)[0]
		if kind == KindCrashPoint {
			continue
		}
		spec, ok := samples[kind]
		if !ok {
			t.Errorf("%s: no sample here: add one and make its Reach name what it acts on", kind)
			continue
		}
		f, err := spec.Build()
		if err != nil {
			t.Fatalf("%s: %v", kind, err)
		}
		if c := ReachOf(f).Components; len(c) == 0 {
			t.Errorf("%s names nothing it acts on", kind)
		}
	}
	if f, _ := (Spec{Kind: KindKill, Pod: "worker-10"}).Build(); !slices.Equal(ReachOf(f).Components, []string{"worker"}) {
		t.Errorf("a kill of worker-10 acts on %v, want the role worker", ReachOf(f).Components)
	}
}
