package explore

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/outboxchaos/outboxchaos/peers"
	"github.com/outboxchaos/outboxchaos/scenarios/catalogue"
	"github.com/outboxchaos/outboxchaos/scenarios/internal/run"
	"github.com/outboxchaos/outboxchaos/system/config"
)

// Boundary is one deadline of the system under test, of the harness's fake
// vendor, or of a peer relay, by name: a timeout, lease, TTL, window,
// heartbeat or interval, as the scenarios run it (compressed). Random
// schedules size their outages, stalls, latencies and pauses around
// boundaries (Band), so each deadline is both crossed and just missed.
type Boundary struct {
	Name   string        `json:"name"`   // "lease", "backoff-2", "river047 rescue-stuck-jobs-after"
	Source string        `json:"source"` // where the value is read from
	D      time.Duration `json:"d"`
	// Scope is "system" (our pipeline's configuration), "harness" (the
	// fake vendor every run talks to) or "peer" (a peer relay's own).
	Scope string `json:"scope"`
}

func (b Boundary) String() string { return fmt.Sprintf("%s %s (%s)", b.Name, b.D, b.Source) }

// The bands a duration is drawn in around a boundary b.
const (
	BandWellBelow = "well below" // b/10 .. b/2
	BandJustBelow = "just below" // 80 % .. 95 % of b
	BandJustAbove = "just above" // 105 % .. 125 % of b
	BandFarAbove  = "far above"  // 2 b .. 4 b
)

// Bands are the four bands, in draw order.
var Bands = []string{BandWellBelow, BandJustBelow, BandJustAbove, BandFarAbove}

// bandRange is the band's interval around b, in per-mille of b.
func bandRange(band string) (lo, hi int64) {
	switch band {
	case BandWellBelow:
		return 100, 500
	case BandJustBelow:
		return 800, 950
	case BandJustAbove:
		return 1050, 1250
	default:
		return 2000, 4000
	}
}

// bandOf says in which band d lies around b ("" in none).
func bandOf(d, b time.Duration) string {
	if b <= 0 {
		return ""
	}
	for _, band := range Bands {
		lo, hi := bandRange(band)
		if int64(d)*1000 >= int64(b)*lo && int64(d)*1000 <= int64(b)*hi {
			return band
		}
	}
	return ""
}

// systemBoundaries are the durations of c, each named by its setting and
// read from the configuration itself (config.Env), so a new duration
// setting is a boundary without a line here; a list of durations (the
// backoff) gives one boundary per step. Derived deadlines follow: a
// broker connection's loss (three heartbeats) and the vendor's final report
// (accept window plus report-final-after).
func systemBoundaries(c config.Config) []Boundary {
	var out []Boundary
	for _, kv := range c.Env() {
		k, v, _ := strings.Cut(kv, "=")
		name := strings.ReplaceAll(strings.ToLower(strings.TrimPrefix(k, "OUTBOXCHAOS_")), "_", "-")
		parts := strings.Split(v, ",")
		for i, p := range parts {
			d, err := time.ParseDuration(strings.TrimSpace(p))
			if err != nil || d <= 0 {
				break
			}
			n := name
			if len(parts) > 1 {
				n = fmt.Sprintf("%s-%d", name, i+1)
			}
			out = append(out, Boundary{Name: n, D: d, Scope: "system", Source: "system config " + name})
		}
	}
	out = append(out,
		Boundary{Name: "amqp-heartbeat-loss", D: 3 * c.AMQPHeartbeat, Scope: "system", Source: "system config amqp-heartbeat ×3"},
		Boundary{Name: "report-final", D: c.VendorAcceptWindow + c.ReportFinalAfter, Scope: "system",
			Source: "system config vendor-accept-window + report-final-after"})
	return out
}

// harnessBoundaries are the fake vendor's deadlines in every run.
func harnessBoundaries() []Boundary {
	v := run.HarnessVendor()
	return []Boundary{
		{Name: "vendor hang-timeout", D: v.HangTimeout, Scope: "harness", Source: "fakevendor.Options.HangTimeout (scenarios harnessVendor)"},
		{Name: "vendor land-late-max", D: v.LandLateMax, Scope: "harness", Source: "fakevendor.Options.LandLateMax (scenarios harnessVendor)"},
	}
}

// peerBoundaries are the deadlines each peer relay declares
// (peers.Peer.Deadlines) that are durations; "none" or "the run's day"
// are not.
func peerBoundaries() []Boundary {
	var out []Boundary
	for _, p := range peers.All() {
		for _, dl := range p.Deadlines {
			d, err := time.ParseDuration(dl.Value)
			if err != nil || d <= 0 {
				continue
			}
			out = append(out, Boundary{Name: p.Name + " " + dl.Name, D: d, Scope: "peer", Source: "peers registry " + p.Name + ": " + dl.Why})
		}
	}
	return out
}

// Boundaries is the whole registry, as the scenarios run it: our
// pipeline's compressed configuration, the fake vendor's, every peer's.
func Boundaries() []Boundary {
	return slices.Concat(systemBoundaries(run.Compressed()), harnessBoundaries(), peerBoundaries())
}

// drawable are the boundaries Generate sizes faults around: the system's
// and the harness's (the pipeline explored is ours; a peer's deadlines
// are its own runs'), short enough for a run.
func drawable() []Boundary {
	var out []Boundary
	for _, b := range Boundaries() {
		if b.Scope != "peer" && b.D <= catalogue.MaxDrawn {
			out = append(out, b)
		}
	}
	return out
}

// drawAround draws a duration in one of the four bands around one of the
// drawable boundaries.
func drawAround(d Draw) (time.Duration, Boundary, string) {
	bs := drawable()
	b := bs[d.Int("sized boundary", 0, len(bs)-1)]
	band := Bands[d.Int("sized band", 0, len(Bands)-1)]
	lo, hi := bandRange(band)
	// Whole milliseconds inside the band: lo rounded up, hi down.
	ms := int64(time.Millisecond)
	loMS := max((int64(b.D)*lo/1000+ms-1)/ms, 1)
	hiMS := max(int64(b.D)*hi/1000/ms, loMS)
	got := d.Int("sized ms", int(loMS), int(hiMS))
	return time.Duration(got) * time.Millisecond, b, band
}

// straddle is a boundary a fault's duration lies just below or just above.
type straddle struct {
	Boundary Boundary
	Band     string
}

// straddles are the boundaries d lies just below or just above (the
// drawable ones: those a run of our pipeline keeps).
func straddles(d time.Duration) []straddle {
	var out []straddle
	for _, b := range slices.Concat(systemBoundaries(run.Compressed()), harnessBoundaries()) {
		if band := bandOf(d, b.D); band == BandJustBelow || band == BandJustAbove {
			out = append(out, straddle{b, band})
		}
	}
	return out
}
