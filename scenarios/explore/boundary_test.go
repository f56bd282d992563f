package explore

import (
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/outboxchaos/outboxchaos/faults"
	"github.com/outboxchaos/outboxchaos/peers"
	"github.com/outboxchaos/outboxchaos/scenarios/internal/run"
	"github.com/outboxchaos/outboxchaos/scenarios/scenario"
	"github.com/outboxchaos/outboxchaos/system/config"
)

// TestBoundariesHaveASource: every boundary names where its value is read
// from, is positive, and its name is unique; the deadlines the issue names
// are there, read from the configuration the scenarios run.
func TestBoundariesHaveASource(t *testing.T) {
	t.Parallel()
	seen := map[string]bool{}
	for _, b := range Boundaries() {
		if b.Source == "" || b.D <= 0 || b.Scope == "" {
			t.Errorf("boundary %+v: no source, scope or value", b)
		}
		if seen[b.Name] {
			t.Errorf("boundary %s twice", b.Name)
		}
		seen[b.Name] = true
	}
	c := run.Compressed()
	for name, want := range map[string]time.Duration{
		"lease": c.Lease, "sending-timeout": c.SendingTimeout, "vendor-timeout": c.VendorTimeout,
		"confirm-timeout": c.ConfirmTimeout, "vendor-accept-window": c.VendorAcceptWindow, "backoff-1": c.Backoff[0],
		"amqp-heartbeat": c.AMQPHeartbeat, "relay-interval": c.RelayInterval, "retry-ttl": c.RetryTTL,
		"vendor hang-timeout": run.HarnessVendor().HangTimeout,
	} {
		if b := boundaryNamed(name); b.D != want {
			t.Errorf("boundary %s: %s, want the configuration's %s", name, b.D, want)
		}
	}
	// Every backoff step, and every peer deadline that is a duration.
	for i := range c.Backoff {
		if !seen["backoff-"+strconv.Itoa(i+1)] {
			t.Errorf("backoff step %d is no boundary", i+1)
		}
	}
	for _, p := range peers.All() {
		for _, dl := range p.Deadlines {
			if _, err := time.ParseDuration(dl.Value); err == nil && !seen[p.Name+" "+dl.Name] {
				t.Errorf("peer %s deadline %s is no boundary", p.Name, dl.Name)
			}
		}
	}
}

func boundaryNamed(name string) Boundary {
	for _, b := range Boundaries() {
		if b.Name == name {
			return b
		}
	}
	return Boundary{}
}

// TestDrawnDurationsHitEveryBand: over many seeds, every drawable boundary
// gets durations in all four bands, and each drawn duration lies in the
// band it was drawn for (so it is both crossed and just missed).
func TestDrawnDurationsHitEveryBand(t *testing.T) {
	t.Parallel()
	hit := map[string]map[string]int{}
	for seed := int64(0); seed < 20000; seed++ {
		d, b, band := drawAround(NewRandDraw(seed))
		if got := bandOf(d, b.D); got != band {
			t.Fatalf("seed %d: %s drawn %s %s lies %q", seed, d, band, b, got)
		}
		if hit[b.Name] == nil {
			hit[b.Name] = map[string]int{}
		}
		hit[b.Name][band]++
	}
	for _, b := range drawable() {
		for _, band := range Bands {
			if hit[b.Name][band] == 0 {
				t.Errorf("boundary %s: no duration drawn %s it", b, band)
			}
		}
	}
	if len(drawable()) < 15 {
		t.Errorf("only %d drawable boundaries", len(drawable()))
	}
}

// TestStraddles: a duration just below the lease straddles it by name.
func TestStraddles(t *testing.T) {
	t.Parallel()
	lease := run.Compressed().Lease
	var names []string
	for _, s := range straddles(lease * 9 / 10) {
		names = append(names, s.Band+" "+s.Boundary.Name)
	}
	if !strings.Contains(strings.Join(names, ";"), BandJustBelow+" lease") {
		t.Errorf("90%% of the lease straddles %v", names)
	}
}

// TestSettingRanges: each swarm setting's bounds are the validated range:
// both bounds validate, a value one below the lower bound does not, nor
// one above an upper bound the validation sets.
func TestSettingRanges(t *testing.T) {
	t.Parallel()
	closedAbove := map[string]bool{}
	integers := map[string]bool{}
	for _, st := range config.Settings() {
		closedAbove[st.Name] = st.Max > 0
		integers[st.Name] = st.Integer
	}
	try := func(name string, v int) error {
		c := run.Compressed()
		if err := scenario.ApplyConfig(&c, map[string]string{name: strconv.Itoa(v)}); err != nil {
			return err
		}
		return c.Validate()
	}
	for _, st := range Settings() {
		if !integers[st.Name] || st.Hi <= st.Lo {
			t.Errorf("%s: drawn across [%d, %d], not an integer setting's range", st.Name, st.Lo, st.Hi)
		}
		delete(integers, st.Name)
		for _, v := range []int{st.Lo, st.Hi} {
			if err := try(st.Name, v); err != nil {
				t.Errorf("%s=%d: %v", st.Name, v, err)
			}
		}
		if try(st.Name, st.Lo-1) == nil {
			t.Errorf("%s=%d validates: the range starts lower", st.Name, st.Lo-1)
		}
		if closedAbove[st.Name] && try(st.Name, st.Hi+1) == nil {
			t.Errorf("%s=%d validates: the range ends higher", st.Name, st.Hi+1)
		}
	}
	for name, integer := range integers {
		if integer {
			t.Errorf("%s: an integer setting no swarm schedule draws (add it to swarmOrder)", name)
		}
	}
}

// TestSwarmSchedules: swarm schedules draw families, modes and settings,
// every one validates, and settings reach both ends of their ranges.
func TestSwarmSchedules(t *testing.T) {
	t.Parallel()
	swarms, sized, overlapping := 0, 0, 0
	edges := map[string]bool{}
	for seed := int64(0); seed < 2000; seed++ {
		s := Generate(NewRandDraw(seed))
		if err := s.Scenario("swarm").Validate(); err != nil {
			t.Fatalf("seed %d: %s: %v", seed, s, err)
		}
		if s.Swarm != nil {
			swarms++
		}
		var windows []Timed
		for _, f := range s.Faults {
			if f.Boundary != "" {
				sized++
			}
			if f.When == WhenWindow {
				windows = append(windows, f)
			}
		}
		for i := range windows {
			for j := range i {
				a, b := windows[i], windows[j]
				if a.After < b.After+b.For && b.After < a.After+a.For {
					overlapping++
				}
			}
		}
		for _, st := range Settings() {
			if v, ok := s.Config[st.Name]; ok {
				edges[st.Name+"="+v] = true
			}
		}
	}
	if swarms < 1000 || sized < 1000 || overlapping < 300 {
		t.Errorf("of 2000 schedules %d swarm, %d sized faults, %d overlapping window pairs", swarms, sized, overlapping)
	}
	for _, st := range Settings() {
		if !edges[st.Name+"="+strconv.Itoa(st.Lo)] || !edges[st.Name+"="+strconv.Itoa(st.Hi)] {
			t.Errorf("setting %s never drawn at both ends of [%d, %d]", st.Name, st.Lo, st.Hi)
		}
	}
}

// recordingDraw logs each draw as rapid writes it in a failfile.
type recordingDraw struct {
	d   Draw
	log *strings.Builder
}

func (r recordingDraw) Int(label string, lo, hi int) int {
	v := r.d.Int(label, lo, hi)
	r.log.WriteString("# [TestProperty] [rapid] draw " + label + ": " + strconv.Itoa(v) + "\n")
	return v
}

// TestSwarmSchedulesReplay: a schedule with the new draws (sized,
// overlapping, swarm) replays from the draws a failfile logs, and explore's
// schedule i is the same schedule every time it is drawn.
func TestSwarmSchedulesReplay(t *testing.T) {
	t.Parallel()
	for seed := int64(0); seed < 300; seed++ {
		var log strings.Builder
		s := Generate(recordingDraw{NewRandDraw(seed), &log})
		d, err := readFailfile(strings.NewReader(log.String()))
		if err != nil {
			t.Fatal(err)
		}
		got := Generate(d)
		if err := d.Err(); err != nil || got.String() != s.String() {
			t.Fatalf("seed %d: replayed %s (%v), want %s", seed, got, err, s)
		}
		if a, b := budgetSchedule(7, int(seed)), budgetSchedule(7, int(seed)); a.String() != b.String() {
			t.Fatalf("schedule %d drawn twice: %s, then %s", seed, a, b)
		}
	}
}

// TestSizedLinksAreOurs: a sized fault acts only on links our pipeline's
// world has: known links, none of a peer's own broker.
func TestSizedLinksAreOurs(t *testing.T) {
	t.Parallel()
	for _, l := range sizedLinks {
		if !slices.Contains(faults.LinkNames, l) || strings.HasPrefix(l, "nats") {
			t.Errorf("sized link %q: not a link of our pipeline's world", l)
		}
	}
}

// TestThawOnlyPodsThatRun: a sized pause drawn at a point of a role the
// schedule does not run (the reconciler's, with reconciliation off)
// becomes no thaw step, which would wait its whole bound for a pod that
// never starts; every thaw's pod is one the schedule runs.
func TestThawOnlyPodsThatRun(t *testing.T) {
	t.Parallel()
	d := NewRandDraw(1)
	dropped := 0
	for i := 0; i < 3000; i++ {
		s := Generate(d)
		var walk func([]scenario.Step)
		walk = func(steps []scenario.Step) {
			for _, st := range steps {
				if st.Do == "thaw" && !s.runs(st.Pod) {
					t.Errorf("schedule %d: thaw of %s, which it does not run: %s", i, st.Pod, s)
				}
				walk(st.Steps)
			}
		}
		walk(s.Scenario("t").Steps)
		for _, f := range s.Faults {
			if f.When == WhenPaused && !s.runs(f.Pod) {
				dropped++
			}
		}
	}
	if dropped == 0 {
		t.Fatal("no schedule drew a pause in a role it does not run: the case this guards was not reached")
	}
}
