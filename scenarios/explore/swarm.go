package explore

import (
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/outboxchaos/outboxchaos/faults"
	"github.com/outboxchaos/outboxchaos/rig"
	"github.com/outboxchaos/outboxchaos/scenarios/internal/run"
	"github.com/outboxchaos/outboxchaos/system/config"
	"github.com/outboxchaos/outboxchaos/system/killpoint"
)

// sizedLinks are the links of our pipeline's world that a sized fault may
// act on; faults.LinkNames also names the links of a peer's own broker
// (nats-relay, nats-worker), which a run of ours does not have.
var sizedLinks = []string{"postgres", "rabbitmq-relay", "rabbitmq-worker", "vendor", "postgres-relay", "postgres-worker"}

// sized draws up to three faults whose durations lie around one of the
// system's deadlines (drawAround): a link down or stalled that long, a
// latency of that much, or a pod frozen that long at any kill-point of its
// process. A window may be drawn to open inside the previous one, so two
// faults overlap in time in different components.
func (s *Schedule) sized(d Draw) {
	var prev Timed // the last window drawn (When "" before the first)
	for range d.Int("sized faults", 0, 3) {
		dur, b, band := drawAround(d)
		ms := int(dur / time.Millisecond)
		var t Timed
		switch d.Int("sized family", 0, 3) {
		case 0:
			t = window(faults.Spec{Kind: faults.KindDown, Link: sizedLinks[d.Int("sized link", 0, len(sizedLinks)-1)]}, 0, ms)
		case 1:
			spec := faults.Spec{Kind: faults.KindLatency, Link: sizedLinks[d.Int("sized link", 0, len(sizedLinks)-1)],
				Delay: faults.Duration(dur), Direction: string(rig.Downstream)}
			// Long enough that a request sent in the window waits the
			// whole delay.
			t = window(spec, 0, ms+d.Int("latency window ms", 100, 1000))
		case 2:
			dir := rig.Downstream
			if d.Int("sized direction", 0, 1) == 1 {
				dir = rig.Upstream
			}
			t = window(faults.Spec{Kind: faults.KindStall, Link: sizedLinks[d.Int("sized link", 0, len(sizedLinks)-1)], Direction: string(dir)}, 0, ms)
		case 3:
			point := pausable[d.Int("sized pause point", 0, len(pausable)-1)]
			// An early hit: with replicas sharing the work, a later one is
			// seldom reached by the first pod.
			hit := d.Int("sized pause hit", 1, 2)
			if slices.ContainsFunc(s.Faults, func(t Timed) bool { return t.Kind == faults.KindPausePoint }) {
				continue // one frozen pod at a time: each thaws on its own
			}
			role := roleOfPoint(point)
			s.Faults = append(s.Faults, Timed{Spec: faults.Spec{Kind: faults.KindPausePoint, Point: point, Hit: hit}, When: WhenArmed, Role: role,
				Boundary: b.Name, Band: band})
			s.Faults = append(s.Faults, Timed{Spec: faults.Spec{Kind: faults.KindResume, Pod: role + "-1"}, When: WhenPaused,
				For: faults.Duration(dur), Boundary: b.Name, Band: band})
			continue
		}
		at := d.Int("at ms", 0, 1500)
		if prev.When == WhenWindow && d.Int("overlap the previous", 0, 1) == 1 {
			// Opens while the previous window is still in place.
			at = int(prev.After.D()/time.Millisecond) + d.Int("into it ms", 0, int(prev.For.D()/time.Millisecond))
		}
		t.After = faults.Duration(time.Duration(at) * time.Millisecond)
		t.Boundary, t.Band = b.Name, band
		s.Faults = append(s.Faults, t)
		prev = t
	}
}

// pausable are the kill-points a pause may freeze a pod at: every one but
// the batch job's (a job runs to its end before the pods start).
var pausable = slices.DeleteFunc(slices.Clone(killpoint.Names), func(p string) bool { return strings.HasPrefix(p, "job.") })

// roleOfPoint is the pod role a kill-point's process runs as.
func roleOfPoint(point string) string {
	proc, _, _ := strings.Cut(point, ".")
	if proc == "reconcile" {
		return "reconciler"
	}
	return proc
}

// Families are the fault families a swarm schedule enables a subset of
// (Groce et al., swarm testing): a family left out is never drawn, so the
// faults left in meet the pipeline without the others masking them.
var Families = []string{faults.KindKillPoint, faults.KindFailpoint, faults.KindPausePoint, faults.KindVendor, faults.KindDown,
	faults.KindLatency, faults.KindStall, faults.KindClock, faults.KindWithdrawConsent, faults.KindPoison}

// family is the swarm family of a schedule's fault (a resume belongs to its
// pause).
func (t Timed) family() string {
	if t.Kind == faults.KindResume {
		return faults.KindPausePoint
	}
	return t.Kind
}

// Setting is an integer setting a swarm schedule may draw across its whole
// validated range, [Lo, Hi]: the range the configuration declares for it
// (config.Settings); where it declares no upper bound, Hi is the swarm's
// cap (swarmCaps).
type Setting struct {
	Name   string
	Lo, Hi int
}

// swarmOrder is the order a swarm schedule draws its settings in, every
// integer setting of the configuration: a new one goes last, so a seed
// draws the same schedule it drew before.
var swarmOrder = []string{"batch-size", "alert-attempt", "delivery-limit", "delivery-slack", "queue-max-length",
	"in-listener-retries", "retry-max", "relay-drain-depth", "relay-drain-claimers", "reconcile-batch",
	"reconcile-max-tries", "reconcile-max-resends"}

// swarmCaps bounds from above the settings the configuration leaves open
// there, from the compressed defaults: a few steps past what a run uses.
func swarmCaps(c config.Config) map[string]int {
	return map[string]int{
		"alert-attempt":         len(c.Backoff) + 2,
		"delivery-limit":        2 * c.DeliveryLimit,
		"delivery-slack":        2 * c.DeliverySlack,
		"queue-max-length":      64,
		"in-listener-retries":   2 * c.InListenerRetries,
		"retry-max":             2 * c.RetryMax,
		"reconcile-max-tries":   2 * c.ReconcileMaxTries,
		"reconcile-max-resends": 3,
	}
}

// Settings are the settings a swarm schedule draws, in swarmOrder, each
// across the range config.Settings declares (TestSettingRanges checks
// each bound against config.Validate, and that every integer setting is
// drawn).
func Settings() []Setting {
	declared := map[string]config.Setting{}
	for _, st := range config.Settings() {
		declared[st.Name] = st
	}
	caps := swarmCaps(run.Compressed())
	var out []Setting
	for _, name := range swarmOrder {
		st := declared[name]
		hi := st.Max
		if hi == 0 {
			hi = caps[name]
		}
		out = append(out, Setting{Name: name, Lo: st.Min, Hi: hi})
	}
	return out
}

// drawSetting draws a value across [lo, hi]: an edge, anywhere uniformly,
// or log-uniformly (so 1..10000 reaches its small values too).
func drawSetting(d Draw, name string, lo, hi int) int {
	switch d.Int("set "+name+" how", 0, 2) {
	case 0:
		if d.Int("set "+name+" edge", 0, 1) == 0 {
			return lo
		}
		return hi
	case 1:
		return d.Int("set "+name, lo, hi)
	}
	decades := int(math.Ceil(math.Log10(float64(hi - lo + 1))))
	top := int(math.Pow(10, float64(d.Int("set "+name+" decade", 0, decades))))
	return min(lo+d.Int("set "+name, 0, top-1), hi)
}

// swarm draws a swarm schedule's choices: the fault families it keeps,
// its topology and modes (relay and worker replicas, RunOnce or drain, the
// reconciler's mode and replicas), and a random subset of settings, each
// across its range.
func (s *Schedule) swarm(d Draw) {
	s.Swarm = []string{}
	for _, f := range Families {
		if d.Int("swarm "+f, 0, 1) == 1 {
			s.Swarm = append(s.Swarm, f)
		}
	}
	s.Faults = slices.DeleteFunc(s.Faults, func(t Timed) bool { return !slices.Contains(s.Swarm, t.family()) })
	s.Relays = d.Int("swarm relays", 1, 3)
	s.Workers = d.Int("swarm workers", 1, 3)
	if slices.ContainsFunc(s.Faults, func(t Timed) bool { return t.Kind == faults.KindPausePoint && t.Role == "worker" }) {
		// A frozen worker's delivery goes to another consumer.
		s.Workers = max(s.Workers, 2)
	}
	s.Drain = d.Int("swarm drain", 0, 1) == 1
	s.Reconcile = ReconcileModes[d.Int("swarm reconcile", 0, len(ReconcileModes)-1)]
	for _, st := range Settings() {
		if d.Int("swarm set "+st.Name, 0, 3) > 0 {
			continue
		}
		// A copy each time: the boundaries' maps are shared.
		s.Config = mergeConfig(s.Config, map[string]string{st.Name: strconv.Itoa(drawSetting(d, st.Name, st.Lo, st.Hi))})
	}
	if s.Reconcile != "" {
		// Two reconcilers: one may look up a row while the other settles it.
		s.Reconcilers = d.Int("swarm reconcilers", 1, 2)
	}
}
