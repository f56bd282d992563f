package run

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nats-io/nats.go"
	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/outboxchaos/outboxchaos/fakevendor"
	"github.com/outboxchaos/outboxchaos/faults"
	"github.com/outboxchaos/outboxchaos/peers"
	"github.com/outboxchaos/outboxchaos/rig"
	"github.com/outboxchaos/outboxchaos/scenarios/scenario"
	"github.com/outboxchaos/outboxchaos/system/app"
	"github.com/outboxchaos/outboxchaos/system/broker"
	"github.com/outboxchaos/outboxchaos/system/clock"
	"github.com/outboxchaos/outboxchaos/system/config"
	"github.com/outboxchaos/outboxchaos/system/sandbox"
)

// Env is one scenario run's world: a scratch schema and prefix, the fake
// vendor and alert sink, a Toxiproxy per link, the pods, and the timeline.
// The pods reach Postgres, RabbitMQ and the vendor only through the
// proxies; the harness observes directly. FaultWorld is how the fault
// engine sees it. Its methods live in pods.go (pods), observe.go
// (what the harness reads) and operator.go (what an operator does).
type Env struct {
	Scenario *scenario.Scenario
	Seed     int64
	Bin      string
	// ourBin is what our pods run: Bin's pod build beside it, or Bin
	// (pipelineBin).
	ourBin string
	TL     *rig.Timeline
	SB     *sandbox.Sandbox
	Net    *rig.Network
	// Proxies: one Postgres link, one RabbitMQ link per role, one vendor link.
	PG, AMQPRelay, AMQPWorker, VendorLink *rig.Proxy
	// PGRelay, PGWorker and PGJob are the relays', the workers' and the
	// batch job's own hops in front of PG.
	PGRelay, PGWorker, PGJob *rig.Proxy
	// brokerHops are, with several broker nodes, the links to the nodes
	// after the first: "rabbitmq-relay-2", "rabbitmq-worker-2", …
	brokerHops []*rig.Proxy
	infra      faults.NodeControl
	vendor     *fakevendor.Server
	Sink       *fakevendor.AlertSink
	Pool       *pgxpool.Pool // direct, for observation
	Cfg        config.Config // base child configuration
	Day        time.Time     // the virtual start time
	Bug        string        // canary bug armed in every pod
	// CoverDir is where pods built with -cover write their counters
	// (GOCOVERDIR); "": nowhere.
	CoverDir string
	// Impl is the relay under test (peers.Lookup; "" or "ours": our
	// relay), Peer its registry entry; a seam peer's relay and job pods
	// run PeerBin instead of Bin, a command-line relay's relay pods its
	// Peer.Command.
	Impl, PeerBin string
	Peer          peers.Peer

	// NATS is the run's own JetStream, when the relay under test uses one
	// (scenarios/jetstream.go); natsLinks are its links.
	NATS      *rig.NATSServer
	natsLinks []*rig.Proxy
	natsConns []*nats.Conn // the harness's own connections to it (window probes)

	sup *rig.Supervisor // the pods
	// jump owns the run's file clock, when its settle may jump it (nil:
	// the clock runs in real time); jumpEngine is the run's fault engine,
	// whose open faults forbid a jump.
	jump       *jumper
	jumpEngine *faults.Engine
	// oneShots counts the one-shot pods running (StartOnce).
	oneShots atomic.Int32
	// waits is the wall time steps spent awaiting conditions or
	// windows' durations (Cost.Waiting): parallel waits count once.
	waits waitClock

	// amqpConn is the harness's kept connection to the shared broker
	// (brokerConn), dialed at the first look.
	amqpMu   sync.Mutex
	amqpConn *amqp.Connection
	// lookCh is the channel the looks at the queues' depths share on it
	// (withLookChannel), lookMu their turns.
	lookMu sync.Mutex
	lookCh *amqp.Channel

	// audit is the harness's own record of what it seeded and did.
	audit harnessLog

	mu     sync.Mutex
	seq    map[string]int
	meta   map[string]podMeta       // by pod name
	parked map[string]amqp.Delivery // parked copies an operator took, by message_id
}

// Options tune a run.
type Options struct {
	PGURL, AMQPURL string
	Bin            string // outboxchaos binary for the pods (its pod build beside it, Bin-pod, when there is one: pipelineBin)
	Seed           int64
	// Bug enables a canary bug (system/canary) in every pod.
	Bug string
	// CoverDir, if set, is given to every pod as GOCOVERDIR: a pod
	// binary built with -cover writes its coverage counters there when it
	// exits (or at a kill-point, just before it dies), for the map of the
	// error branches the runs reached (package branches).
	CoverDir string
	// Artifacts is where a failing run writes its record, scenario and
	// timeline (a folder per run); "" writes nothing.
	Artifacts string
	// RecordAll writes the artifacts of passing runs too.
	RecordAll bool
	// Impl is the relay under test (peers.Lookup); "" is ours. PeerDir is
	// the folder of the peer binaries (default: Bin's folder).
	Impl, PeerDir string

	// For a world opened by another driver (Open), such as the simulator:
	// Clock is the pods' clock setting (default: a virtual clock at rate 1
	// from the scenario's start time), Tune adjusts the pods' base
	// configuration (the run's prefix, URLs and clock are set after it, the
	// scenario's settings after those), and Vendor the fake vendor's
	// options.
	Clock  string
	Tune   func(*config.Config)
	Vendor func(*fakevendor.Options)

	// NoJumps keeps the run's clock in real time (no jumps while it settles
	// or a step waits, jump.go): the reference a jumping run is compared
	// with.
	NoJumps bool

	// Sandboxes, if set, hands out kept, migrated schemas (reset between
	// runs) to the runs it may serve: our own pipeline, migrated by the
	// harness, with no canary, on the shared services (newSandbox). Nil:
	// every run creates its schema and drops it.
	Sandboxes *sandbox.Pool

	// Infra is the run's own Postgres and RabbitMQ in containers, which
	// the infrastructure faults act on (scenarios/infra starts them; PGURL
	// and AMQPURL then point at them). Nil: the shared services, which no
	// fault crashes.
	Infra faults.NodeControl
}

// DefaultOptions reads the service URLs from the environment
// (OUTBOXCHAOS_PG_URL, OUTBOXCHAOS_AMQP_URL) with local defaults.
func DefaultOptions() Options {
	c := config.Default()
	_ = c.FromEnv()
	return Options{PGURL: c.PGURL, AMQPURL: c.AMQPURL, Seed: time.Now().UnixNano() % 1_000_000, Artifacts: "artifacts"}
}

// Compressed returns the production configuration with every duration
// Compressed so a scenario runs in seconds: one production minute is
// 100 ms, so the 15-minute lease is 1.5 s and the relay's, cleanup's and
// reconciler's 5-minute intervals 500 ms (three relay runs per lease, as
// in production; polling five times faster only cost CPU: a fifth of a
// random schedule's), and the 10-minute retry TTL 300 ms.
//
// The 10-second vendor timeout is a floor, not a ratio: 2 s, far more than
// a call to the local fake vendor takes on a loaded machine, so only the
// calls a fault holds ever reach it (at 500 ms a slow ordinary call timed
// out under load and added an unknown outcome no scenario asked for). The
// 10-minute SENDING timeout, which must outlast it, is 3 s.
func Compressed() config.Config {
	c := config.Default()
	c.RelayInterval = 500 * time.Millisecond
	c.Lease = 1500 * time.Millisecond
	c.ConfirmTimeout = 600 * time.Millisecond
	c.Backoff = config.Durations{100 * time.Millisecond, 200 * time.Millisecond, 400 * time.Millisecond,
		800 * time.Millisecond, 1600 * time.Millisecond, 3 * time.Second}
	c.InListenerDelay = 50 * time.Millisecond
	c.RetryTTL = 300 * time.Millisecond
	c.VendorTimeout = 2 * time.Second
	c.SendingTimeout = 3 * time.Second
	c.CleanupInterval = 500 * time.Millisecond
	c.CleanupLockTTL = time.Second
	c.AlertTimeout = time.Second
	c.DeliveryLimit = 20
	// Reconciliation: a send's expireat is its claim plus 3 s (far more
	// than a loaded machine takes from claim to vendor, so no send expires
	// by accident); a lookup is final 3.4 s after the claim.
	c.VendorAcceptWindow = 3 * time.Second
	c.ReportFinalAfter = 300 * time.Millisecond
	c.ClockMargin = 100 * time.Millisecond
	c.ReconcileInterval = 500 * time.Millisecond
	c.ReconcileLockTTL = time.Second
	c.ReconcileRetry = 150 * time.Millisecond
	c.ReconcileMaxTries = 6
	return c
}

// HarnessVendor is the fake vendor's configuration in every run: a hung
// request is answered after HangTimeout, a held land-late request lands
// LandLateMax after it arrived (the boundary registry reads both).
func HarnessVendor() fakevendor.Options {
	return fakevendor.Options{Account: "outboxchaos", Password: "secret", HangTimeout: 5 * time.Second, LandLateMax: 4 * time.Second}
}

func newEnv(ctx context.Context, s *scenario.Scenario, o Options) (e *Env, err error) {
	e = &Env{Scenario: s, Seed: o.Seed, Bin: o.Bin, ourBin: pipelineBin(o.Bin), Bug: o.Bug, CoverDir: o.CoverDir, TL: rig.NewTimeline(), seq: map[string]int{}, meta: map[string]podMeta{},
		parked: map[string]amqp.Delivery{}, infra: o.Infra}
	e.sup = rig.NewSupervisor(e.Logf)
	if s.Infra != "" && o.Infra == nil {
		return e, fmt.Errorf("scenario %s needs containers of its own (%s): run it with make infra", s.Name, s.Infra)
	}
	defer func() {
		if err != nil {
			e.close()
		}
	}()
	if e.Peer, e.PeerBin, err = peerOf(o); err != nil {
		return e, err
	}
	e.Impl = e.Peer.Name
	label := "oc_" + strings.ReplaceAll(s.Name, "-", "_")
	if len(label) > 40 {
		label = label[:40]
	}
	if e.SB, err = newSandbox(ctx, s, o, e.peer(), label); err != nil {
		return e, fmt.Errorf("Postgres at %s (set OUTBOXCHAOS_PG_URL): %w", app.Redact(o.PGURL), err)
	}
	if e.Pool, err = e.SB.Observer(ctx); err != nil {
		return e, err
	}
	if e.Day, err = s.StartTime(time.Now()); err != nil {
		return e, err
	}
	setting := clock.NewVirtual(e.Day, 1).Setting()
	if why := jumpsOff(e, o); o.Clock != "" {
		setting = o.Clock
	} else if why == "" {
		// One file clock for the pods, the vendor and the harness, which
		// moves it while the run settles with nothing in flight (jump.go).
		if e.jump, err = newJumper(e.Day); err != nil {
			return e, err
		}
		setting = e.jump.setting()
	} else {
		e.Logf("harness", "the clock does not jump: %s", why)
	}
	runClock, err := clock.Parse(setting) // read as the pods read it
	if err != nil {
		return e, err
	}
	// The vendor reads the run's clock (a send's expireat is on it) and
	// lands a held land-late request 4 s after it arrived if no lookup
	// comes first: past its expireat, so it is dropped then.
	vo := HarnessVendor()
	vo.Clock = runClock.Now
	if o.Vendor != nil {
		o.Vendor(&vo)
	}
	e.vendor = fakevendor.New(vo)
	vendorURL, err := e.vendor.Start("127.0.0.1:0")
	if err != nil {
		return e, err
	}
	e.Sink = fakevendor.NewAlertSink()
	alertURL, err := e.Sink.Start("127.0.0.1:0")
	if err != nil {
		return e, err
	}
	e.Net = rig.NewNetwork(o.Seed)
	e.Net.SetTimeline(e.TL)
	pgHost, err := hostPort(o.PGURL, "5432")
	if err != nil {
		return e, err
	}
	var amqpHosts []string
	for _, u := range broker.URLs(o.AMQPURL) {
		h, err := hostPort(u, "5672")
		if err != nil {
			return e, err
		}
		amqpHosts = append(amqpHosts, h)
	}
	if len(amqpHosts) == 0 {
		return e, fmt.Errorf("no RabbitMQ URL (set OUTBOXCHAOS_AMQP_URL)")
	}
	amqpHost := amqpHosts[0]
	if e.PG, err = e.Net.Proxy("postgres", pgHost); err != nil {
		return e, err
	}
	if e.PGRelay, err = e.Net.Proxy("postgres-relay", e.PG.Addr()); err != nil {
		return e, err
	}
	if e.PGWorker, err = e.Net.Proxy("postgres-worker", e.PG.Addr()); err != nil {
		return e, err
	}
	if e.PGJob, err = e.Net.Proxy("postgres-job", e.PG.Addr()); err != nil {
		return e, err
	}
	if e.AMQPRelay, err = e.Net.Proxy("rabbitmq-relay", amqpHost); err != nil {
		return e, err
	}
	if e.AMQPWorker, err = e.Net.Proxy("rabbitmq-worker", amqpHost); err != nil {
		return e, err
	}
	// Each node after the first has its own hop per role, so a pod lists
	// every node and reaches each through the harness.
	for i, h := range amqpHosts[1:] {
		for _, link := range []string{"rabbitmq-relay", "rabbitmq-worker"} {
			p, err := e.Net.Proxy(fmt.Sprintf("%s-%d", link, i+2), h)
			if err != nil {
				return e, err
			}
			e.brokerHops = append(e.brokerHops, p)
		}
	}
	vHost, err := hostPort(vendorURL, "80")
	if err != nil {
		return e, err
	}
	if e.VendorLink, err = e.Net.Proxy("vendor", vHost); err != nil {
		return e, err
	}
	if err := e.startJetStream(ctx); err != nil {
		return e, err
	}

	c := Compressed()
	if o.Tune != nil {
		o.Tune(&c)
	}
	// The run's own wiring wins over any tuning.
	c.Prefix, c.AlertURL = e.SB.Prefix, alertURL
	c.PGURL = replaceHost(e.SB.PGURL, e.PG.Addr())
	c.VendorURL = "http://" + e.VendorLink.Addr()
	c.Clock = setting
	if err := scenario.ApplyConfig(&c, s.Config); err != nil {
		return e, err
	}
	e.Cfg = c
	if err := c.Validate(); err != nil {
		return e, fmt.Errorf("scenario configuration: %w", err)
	}
	e.initAudit()
	from := "new"
	if e.SB.Migrated() {
		from = "kept, migrated"
	}
	e.Logf("harness", "scenario %s: schema %s (%s), queue prefix %s, seed %d, virtual clock starts %s",
		s.Name, e.SB.Schema, from, e.SB.Prefix, o.Seed, e.Day.Format("2006-01-02 15:04:05 MST"))
	return e, nil
}

// Logf adds a harness line to the timeline.
func (e *Env) Logf(source, format string, args ...any) { e.TL.Add(source, format, args...) }

// Infra is the run's containers (nil: the shared services), with its own
// JetStream as node "nats" if it has one.
func (e *Env) Infra() faults.NodeControl {
	if e.NATS != nil {
		return natsInfra{inner: e.infra, nats: e.NATS}
	}
	return e.infra
}

// MainQueue is the run's main queue.
func (e *Env) MainQueue() string { return broker.NamesFor(e.SB.Prefix).Main }

// amqpVia is the pods' amqp-url through link: the link's hop to the first
// node, then its hops to the others, separated by commas.
func (e *Env) amqpVia(link string) (string, error) {
	first, err := e.Link(link)
	if err != nil {
		return "", err
	}
	base := broker.URLs(e.SB.AMQPURL)[0]
	out := []string{replaceHost(base, first.Addr())}
	for _, p := range e.brokerHops {
		if strings.HasPrefix(p.Name(), link+"-") {
			out = append(out, replaceHost(base, p.Addr()))
		}
	}
	return strings.Join(out, ","), nil
}

// Link returns the proxy called name.
func (e *Env) Link(name string) (*rig.Proxy, error) {
	for _, p := range append(append([]*rig.Proxy{e.PG, e.AMQPRelay, e.AMQPWorker, e.VendorLink, e.PGRelay, e.PGWorker, e.PGJob}, e.brokerHops...), e.natsLinks...) {
		if p.Name() == name {
			return p, nil
		}
	}
	return nil, fmt.Errorf("no link %q (links: %s)", name, strings.Join(faults.LinkNames, ", "))
}

// Vendor is the fake SMS vendor.
func (e *Env) Vendor() *fakevendor.Server { return e.vendor }

// DB is the harness's own pool on the run's schema.
func (e *Env) DB() *pgxpool.Pool { return e.Pool }

// Broker is the operator's access to the run's queues.
func (e *Env) Broker() faults.Broker { return e }

func (e *Env) close() error {
	e.StopPods()
	if e.Net != nil {
		e.Net.Close()
	}
	e.mu.Lock()
	for _, c := range e.natsConns {
		c.Close()
	}
	e.mu.Unlock()
	if e.NATS != nil {
		e.NATS.Close()
	}
	if e.vendor != nil {
		_ = e.vendor.Close()
	}
	if e.Sink != nil {
		_ = e.Sink.Close()
	}
	e.amqpMu.Lock()
	if e.amqpConn != nil {
		_ = e.amqpConn.Close()
		e.amqpConn = nil
	}
	e.amqpMu.Unlock()
	jerr := e.jump.close()
	if e.SB != nil {
		return errors.Join(e.SB.Close(), jerr)
	}
	return jerr
}

// newSandbox is the run's schema and queue prefix: from the pool when the
// run may take a kept one, else new. A kept schema is migrated by our
// migration alone, so a run that migrates itself, a canary (which may
// change the migration), a peer (whose tables ours does not make) and a
// run on containers of its own (another server) each get a new one.
func newSandbox(ctx context.Context, s *scenario.Scenario, o Options, peer bool, label string) (*sandbox.Sandbox, error) {
	if o.Sandboxes == nil || s.SelfMigrate || o.Bug != "" || peer || o.Infra != nil || s.Infra != "" {
		return sandbox.New(ctx, o.PGURL, o.AMQPURL, label)
	}
	return o.Sandboxes.Get(ctx, label)
}

func hostPort(rawURL, defPort string) (string, error) {
	u, err := parseURL(rawURL)
	if err != nil {
		return "", err
	}
	h := u.Host
	if h == "" {
		return "", fmt.Errorf("URL %s has no host", app.Redact(rawURL))
	}
	if !strings.Contains(h, ":") {
		h += ":" + defPort
	}
	return h, nil
}

func replaceHost(rawURL, hostport string) string {
	u, err := parseURL(rawURL)
	if err != nil {
		return rawURL
	}
	u.Host = hostport
	return u.String()
}

// withQuery sets one query parameter of a URL.
func withQuery(rawURL, key, value string) string {
	u, err := parseURL(rawURL)
	if err != nil {
		return rawURL
	}
	q := u.Query()
	q.Set(key, value)
	u.RawQuery = q.Encode()
	return u.String()
}

func parseURL(s string) (*url.URL, error) {
	u, err := url.Parse(s)
	if err != nil {
		return nil, fmt.Errorf("parse URL %s: %w", app.Redact(s), err)
	}
	return u, nil
}

// appPrefix starts the application_name of every pod's connections:
// appPrefix()+"/"+pod, so the harness can find them in pg_stat_activity.
func (e *Env) appPrefix() string { return e.SB.Prefix }

func (e *Env) appName(pod string) string { return e.appPrefix() + "/" + pod }

// FaultWorld is the run's world as the fault engine sees it: the Env,
// whose links, pods and proxies are handed to faults as handles, never as
// the concrete types of package rig.
func (e *Env) FaultWorld() faults.World { return faultWorld{e} }

// faultWorld is an Env seen through faults.World (and faults.InfraWorld:
// Infra and MainQueue come from the Env).
type faultWorld struct{ *Env }

// Link returns the link called name as a handle.
func (w faultWorld) Link(name string) (faults.LinkHandle, error) {
	p, err := w.Env.Link(name)
	if err != nil {
		return nil, err
	}
	return linkHandle{p}, nil
}

// Pods lists every pod started so far as handles.
func (w faultWorld) Pods() []faults.PodHandle {
	var out []faults.PodHandle
	for _, p := range w.Env.Pods() {
		out = append(out, p)
	}
	return out
}

// Pod finds a pod by name.
func (w faultWorld) Pod(name string) (faults.PodHandle, error) {
	p, err := w.Env.Pod(name)
	if err != nil {
		return nil, err
	}
	return p, nil
}

// linkHandle is a proxy as a fault may use it.
type linkHandle struct{ p *rig.Proxy }

func (l linkHandle) Down(context.Context) (faults.ToxicHandle, error) { return toxic(l.p.Down()) }

func (l linkHandle) Latency(ctx context.Context, dir rig.Direction, delay time.Duration) (faults.ToxicHandle, error) {
	return toxic(l.p.Latency(ctx, dir, delay, 0))
}

func (l linkHandle) Stall(ctx context.Context, dir rig.Direction) (faults.ToxicHandle, error) {
	return toxic(l.p.Timeout(ctx, dir, 0))
}

// toxic hands a toxic on as a handle (nil, not a nil *Toxic, on error).
func toxic(t *rig.Toxic, err error) (faults.ToxicHandle, error) {
	if err != nil {
		return nil, err
	}
	return t, nil
}
