package sim

import (
	"hash/fnv"
	"math"
	"math/rand/v2"
	"sort"
	"strconv"
	"time"

	"gonum.org/v1/gonum/stat/distuv"

	"github.com/outboxchaos/outboxchaos/fakevendor"
	"github.com/outboxchaos/outboxchaos/faults"
	"github.com/outboxchaos/outboxchaos/system/killpoint"
)

// Plan is everything random about a day, drawn from its seed before it
// starts: which members consent, each send's vendor mode and latency, and
// the instants of every fault and deploy. Two runs with one seed share it.
type Plan struct {
	day    Day
	seed   int64
	Events []Planned // in virtual time order
}

// Planned is one planned happening of the day: a job run, or faults put
// in place through the fault engine (the day's ledger records them), as
// the catalogue writes them. A fault event is data the driver carries out
// one way: inject at At, then recover after For, or at once if the faults
// act once (a deploy), or when the day ends (For 0: the weather).
type Planned struct {
	At   time.Time
	What string // job, vendor-weather, worker-kill, relay-kill, broker-blip, db-blip, deploy: its name in the report
	Job  *Job
	// Faults are what a fault event injects: the weather, a "kill" of the
	// active worker (OfActiveWorker), a "kill-point" armed in the next
	// relay runs until one dies there (Armed), a "down" of each link, a
	// "rolling-restart" of the workers.
	Faults []faults.Spec
	For    time.Duration
	// OfActiveWorker: the faults' pod is the worker consuming when the
	// event fires (RabbitMQ's single active consumer).
	OfActiveWorker bool
	// Armed: the faults are armed in the relay runs the cron starts from
	// now, until one dies at its point (then recovered).
	Armed bool
}

// relayKillpoints are where a killed relay run may die.
var relayKillpoints = []string{killpoint.RelayAfterClaim, killpoint.RelayAfterPublish, killpoint.RelayAfterConfirm}

// NewPlan draws the plan of d from seed.
func NewPlan(d Day, seed int64) *Plan {
	p := &Plan{day: d, seed: seed}
	r := rand.New(rand.NewPCG(uint64(seed), 0x5eed))
	for i := range d.Jobs {
		p.Events = append(p.Events, Planned{At: d.at(d.Jobs[i].At), What: "job", Job: &d.Jobs[i]})
	}
	from, until := d.at("08:05"), d.at("20:30")
	instant := func() time.Time {
		return from.Add(time.Duration(r.Int64N(int64(until.Sub(from)/time.Second))) * time.Second)
	}
	blip := time.Duration(d.Faults.BlipSeconds * float64(time.Second))
	down := func(links ...string) []faults.Spec {
		var out []faults.Spec
		for _, l := range links {
			out = append(out, faults.Spec{Kind: faults.KindDown, Link: l})
		}
		return out
	}
	if w := p.Weather(); w.Timeout+w.Fail5xx+w.Throttle > 0 {
		p.Events = append(p.Events, Planned{At: d.at("07:55"), What: "vendor-weather", Faults: []faults.Spec{{Kind: faults.KindVendorWeather, Weather: &w}}})
	}
	for i := 0; i < d.Faults.WorkerKills; i++ {
		// Recovered once the deployment's replacement is due.
		p.Events = append(p.Events, Planned{At: instant(), What: "worker-kill", Faults: []faults.Spec{{Kind: faults.KindKill}}, For: restartDelay, OfActiveWorker: true})
	}
	for i := 0; i < d.Faults.RelayKills; i++ {
		at := instant()
		point := relayKillpoints[r.IntN(len(relayKillpoints))]
		p.Events = append(p.Events, Planned{At: at, What: "relay-kill", Faults: []faults.Spec{{Kind: faults.KindKillPoint, Point: point}}, Armed: true})
	}
	for i := 0; i < d.Faults.BrokerBlips; i++ {
		p.Events = append(p.Events, Planned{At: instant(), What: "broker-blip", Faults: down("rabbitmq-relay", "rabbitmq-worker"), For: blip})
	}
	for i := 0; i < d.Faults.DBBlips; i++ {
		p.Events = append(p.Events, Planned{At: instant(), What: "db-blip", Faults: down("postgres"), For: blip})
	}
	for _, t := range d.Deploys {
		p.Events = append(p.Events, Planned{At: d.at(t), What: "deploy", Faults: []faults.Spec{{Kind: faults.KindRollingRestart, Deployment: "worker"}}})
	}
	sort.SliceStable(p.Events, func(i, j int) bool { return p.Events[i].At.Before(p.Events[j].At) })
	return p
}

// unit returns a uniform number in [0, 1) fixed by the seed and the keys.
func (p *Plan) unit(keys ...string) float64 {
	h := fnv.New64a()
	for _, k := range keys {
		_, _ = h.Write([]byte(k))
		_, _ = h.Write([]byte{0})
	}
	r := rand.New(rand.NewPCG(uint64(p.seed), h.Sum64()))
	return r.Float64()
}

// Consents reports whether member id has SMS consent.
func (p *Plan) Consents(id int64) bool {
	return p.unit("consent", strconv.FormatInt(id, 10)) < p.day.Consent
}

// Weather is the vendor's weather over the day: the shares of sends that
// time out, fail or are throttled, drawn per send from the plan's seed by
// refkey and attempt, so it does not depend on the order sends arrive in.
func (p *Plan) Weather() fakevendor.Weather {
	v := p.day.Vendor
	return fakevendor.Weather{Timeout: v.Timeout, Fail5xx: v.Fail5xx, Throttle: v.Throttle, Seed: p.seed}
}

// Latency is the vendor's virtual answer time for refkey: log-normal with
// the day's median and 99th percentile.
func (p *Plan) Latency(refkey string) time.Duration {
	v := p.day.Vendor
	if v.LatencyMedianMS <= 0 {
		return 0
	}
	sigma := 0.0
	if v.LatencyP99MS > v.LatencyMedianMS {
		sigma = math.Log(v.LatencyP99MS/v.LatencyMedianMS) / 2.3263
	}
	u := math.Min(math.Max(p.unit("latency", refkey), 1e-6), 1-1e-6)
	z := distuv.UnitNormal.Quantile(u)
	ms := v.LatencyMedianMS * math.Exp(sigma*z)
	return time.Duration(ms * float64(time.Millisecond))
}
