package sim

import (
	"strconv"
	"time"

	"github.com/outboxchaos/outboxchaos/fakevendor"
	"github.com/outboxchaos/outboxchaos/system/config"
)

// Setting is one configuration value of a simulated day, as the report
// lists it: production value, and what it became at the day's rate.
type Setting struct {
	Name, Production, Simulated, Runs string
}

// floors keep a real-time setting above what this machine needs for one
// round trip, whatever the rate; a floor above production/rate is a
// distortion, and the report lists it.
var floors = map[string]time.Duration{
	"confirm-timeout":   300 * time.Millisecond,
	"vendor-timeout":    200 * time.Millisecond,
	"retry-ttl":         50 * time.Millisecond,
	"in-listener-delay": 5 * time.Millisecond,
}

// cronned are the intervals of the pods the day runs as cron jobs
// (relay, cleanup, reconciler, each run --once): the cron's 5 virtual
// minutes stand in for them.
var cronned = map[string]bool{"relay-interval": true, "cleanup-interval": true, "reconcile-interval": true}

// configure sets c for day d at rate, from how each duration setting runs
// (config.DurationSettings): one the pipeline compares with its clock
// keeps its production value (the clock is virtual); one of the
// pipeline's own that runs on a real timer — the broker's retry TTL, the
// confirm and vendor timeouts, the in-listener retry delay — is divided by
// the rate. The services' connection timeouts and heartbeat guard against
// a dead service and keep theirs. It returns the settings for the report.
func configure(c *config.Config, d Day, rate float64) []Setting {
	*c = config.Default()
	c.BatchSize = d.BatchSize
	c.RelayDrain = d.RelayDrain
	var out []Setting
	out = append(out, Setting{Name: "backoff (first)", Production: c.Backoff[0].String(), Simulated: c.Backoff[0].String(), Runs: "on the virtual clock"})
	for _, s := range c.DurationSettings() {
		prod := *s.Value
		switch {
		case s.Runs == config.OnClock:
			out = append(out, Setting{Name: s.Name, Production: prod.String(), Simulated: prod.String(), Runs: "on the virtual clock"})
		case s.Group == config.GroupServices || cronned[s.Name]:
		default:
			v := time.Duration(float64(prod) / rate)
			runs := "real timer, ÷ rate"
			if f := floors[s.Name]; v < f {
				v, runs = f, "real timer, ÷ rate, raised to the floor "+f.String()
			}
			*s.Value = v
			out = append(out, Setting{Name: s.Name, Production: prod.String(), Simulated: v.String(), Runs: runs})
		}
	}
	out = append(out,
		Setting{Name: "relay, cleanup, reconciler", Production: "every 5m (cron)", Simulated: "every 5m virtual", Runs: "one-shot pods the simulator starts on the virtual clock"},
		Setting{Name: "batch-size", Production: "50", Simulated: strconv.Itoa(d.BatchSize), Runs: "per relay run"},
		Setting{Name: "relay-drain", Production: "false", Simulated: strconv.FormatBool(d.RelayDrain), Runs: "drain a backlog in one run"})
	return out
}

// vendorOptions makes the fake vendor answer as the plan says: its delays
// are the plan's virtual latencies divided by the rate, its hang modes
// outlast the client's (compressed) timeout. Its weather is a fault the
// day injects (Plan.Weather).
func vendorOptions(p *Plan, rate float64, vendorTimeout time.Duration) func(*fakevendor.Options) {
	return func(o *fakevendor.Options) {
		o.LatencyFor = func(refkey string) time.Duration {
			return time.Duration(float64(p.Latency(refkey)) / rate)
		}
		o.HangTimeout = 3 * vendorTimeout
		o.LandLateMax = 3 * vendorTimeout
	}
}
