package scenarios

import (
	"context"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/outboxchaos/outboxchaos/fakevendor"
	"github.com/outboxchaos/outboxchaos/faults"
	"github.com/outboxchaos/outboxchaos/system/app"
	"github.com/outboxchaos/outboxchaos/system/canary"
	"github.com/outboxchaos/outboxchaos/system/clock"
	"github.com/outboxchaos/outboxchaos/system/config"
	"github.com/outboxchaos/outboxchaos/system/killpoint"
	"github.com/outboxchaos/outboxchaos/system/sandbox"
)

// Env is one scenario run's world: a scratch schema and prefix, the fake
// vendor and alert sink, a Toxiproxy per link, the pods, and the timeline.
// The pods reach Postgres, RabbitMQ and the vendor only through the
// proxies; the harness observes directly.
type Env struct {
	Scenario *Scenario
	Seed     int64
	Bin      string
	TL       *faults.Timeline
	SB       *sandbox.Sandbox
	Net      *faults.Network
	// Proxies: one Postgres link, one RabbitMQ link per role, one vendor link.
	PG, AMQPRelay, AMQPWorker, VendorLink *faults.Proxy
	Vendor                                *fakevendor.Server
	Sink                                  *fakevendor.AlertSink
	Pool                                  *pgxpool.Pool // direct, for observation
	Cfg                                   config.Config // base child configuration
	Day                                   time.Time     // the virtual start time
	Bug                                   string        // canary bug armed in every pod

	mu       sync.Mutex
	stopping bool
	pods     []*faults.Pod
	faultsIn []FaultRecord
	harness  []faults.Event
	seq      map[string]int
}

// FaultRecord is one injected fault and whether it fired.
type FaultRecord struct {
	Kind   string        `json:"kind"`
	Target string        `json:"target"`
	At     time.Duration `json:"at"`              // when it was recorded (for a window: its end)
	Start  time.Duration `json:"start,omitempty"` // a window's start (network faults)
	Fired  bool          `json:"fired"`
	Detail string        `json:"detail,omitempty"`
}

// Options tune a run.
type Options struct {
	PGURL, AMQPURL string
	Bin            string // outboxchaos binary for the pods
	Seed           int64
	// Bug enables a canary bug (system/canary) in every pod.
	Bug string
}

// DefaultOptions reads the service URLs from the environment
// (OUTBOXCHAOS_PG_URL, OUTBOXCHAOS_AMQP_URL) with local defaults.
func DefaultOptions() Options {
	c := config.Default()
	_ = c.FromEnv()
	return Options{PGURL: c.PGURL, AMQPURL: c.AMQPURL, Seed: time.Now().UnixNano() % 1_000_000}
}

// compressed returns the production configuration with every duration
// compressed so a scenario runs in seconds: one production minute of
// backoff is 100 ms, the 15-minute lease 1.5 s, the 10-minute SENDING
// timeout 1.5 s, the 10-minute retry TTL 300 ms.
func compressed() config.Config {
	c := config.Default()
	c.RelayInterval = 100 * time.Millisecond
	c.Lease = 1500 * time.Millisecond
	c.ConfirmTimeout = 600 * time.Millisecond
	c.Backoff = config.Durations{100 * time.Millisecond, 200 * time.Millisecond, 400 * time.Millisecond,
		800 * time.Millisecond, 1600 * time.Millisecond, 3 * time.Second}
	c.InListenerDelay = 50 * time.Millisecond
	c.RetryTTL = 300 * time.Millisecond
	c.VendorTimeout = 500 * time.Millisecond
	c.SendingTimeout = 1500 * time.Millisecond
	c.CleanupInterval = 200 * time.Millisecond
	c.CleanupLockTTL = time.Second
	c.AlertTimeout = time.Second
	c.DeliveryLimit = 20
	return c
}

func newEnv(ctx context.Context, s *Scenario, o Options) (e *Env, err error) {
	e = &Env{Scenario: s, Seed: o.Seed, Bin: o.Bin, Bug: o.Bug, TL: faults.NewTimeline(), seq: map[string]int{}}
	defer func() {
		if err != nil {
			e.close()
		}
	}()
	label := "oc_" + strings.ReplaceAll(s.Name, "-", "_")
	if len(label) > 40 {
		label = label[:40]
	}
	if e.SB, err = sandbox.New(ctx, o.PGURL, o.AMQPURL, label); err != nil {
		return e, fmt.Errorf("Postgres at %s (set OUTBOXCHAOS_PG_URL): %w", app.Redact(o.PGURL), err)
	}
	if e.Pool, err = pgxpool.New(ctx, e.SB.PGURL); err != nil {
		return e, fmt.Errorf("open observer pool: %w", err)
	}
	e.Vendor = fakevendor.New(fakevendor.Options{Account: "outboxchaos", Password: "secret", HangTimeout: 5 * time.Second})
	vendorURL, err := e.Vendor.Start("127.0.0.1:0")
	if err != nil {
		return e, err
	}
	e.Sink = fakevendor.NewAlertSink()
	alertURL, err := e.Sink.Start("127.0.0.1:0")
	if err != nil {
		return e, err
	}
	e.Net = faults.NewNetwork(o.Seed)
	e.Net.SetTimeline(e.TL)
	pgHost, err := hostPort(o.PGURL, "5432")
	if err != nil {
		return e, err
	}
	amqpHost, err := hostPort(o.AMQPURL, "5672")
	if err != nil {
		return e, err
	}
	if e.PG, err = e.Net.Proxy("postgres", pgHost); err != nil {
		return e, err
	}
	if e.AMQPRelay, err = e.Net.Proxy("rabbitmq-relay", amqpHost); err != nil {
		return e, err
	}
	if e.AMQPWorker, err = e.Net.Proxy("rabbitmq-worker", amqpHost); err != nil {
		return e, err
	}
	vHost, err := hostPort(vendorURL, "80")
	if err != nil {
		return e, err
	}
	if e.VendorLink, err = e.Net.Proxy("vendor", vHost); err != nil {
		return e, err
	}

	c := compressed()
	c.Prefix, c.AlertURL = e.SB.Prefix, alertURL
	c.PGURL = replaceHost(e.SB.PGURL, e.PG.Addr())
	c.VendorURL = "http://" + e.VendorLink.Addr()
	e.Day = clock.At(time.Now(), 10, 0)
	if s.Start != nil {
		e.Day = s.Start(time.Now())
	}
	c.Clock = clock.NewVirtual(e.Day, 1).Setting()
	if s.Configure != nil {
		s.Configure(&c)
	}
	e.Cfg = c
	if err := c.Validate(); err != nil {
		return e, fmt.Errorf("scenario configuration: %w", err)
	}
	e.Logf("harness", "scenario %s: schema and prefix %s, seed %d, virtual clock starts %s",
		s.Name, e.SB.Schema, o.Seed, e.Day.Format("2006-01-02 15:04:05 MST"))
	return e, nil
}

// Logf adds a harness line to the timeline.
func (e *Env) Logf(source, format string, args ...any) { e.TL.Add(source, format, args...) }

// PodOption changes one pod's environment or arguments.
type PodOption func(*podSpec)

type podSpec struct {
	env  []string
	args []string
}

// Killpoint arms a kill-point ("name" or "name:N") in the pod.
func Killpoint(spec string) PodOption {
	return func(p *podSpec) { p.env = append(p.env, killpoint.EnvVar+"="+spec) }
}

// Failpoint arms failpoints in the pod.
func Failpoint(spec string) PodOption {
	return func(p *podSpec) { p.env = append(p.env, killpoint.FailEnvVar+"="+spec) }
}

// WithClock gives the pod its own clock setting.
func WithClock(setting string) PodOption {
	return func(p *podSpec) { p.env = append(p.env, "OUTBOXCHAOS_CLOCK="+setting) }
}

// WithEnv adds KEY=VALUE pairs.
func WithEnv(kv ...string) PodOption { return func(p *podSpec) { p.env = append(p.env, kv...) } }

// WithArgs appends arguments.
func WithArgs(args ...string) PodOption { return func(p *podSpec) { p.args = append(p.args, args...) } }

// Start starts a pod of role relay, worker, cleanup, job (enqueue) or
// migrate, named role-N.
func (e *Env) Start(ctx context.Context, role string, opts ...PodOption) (*faults.Pod, error) {
	c := e.Cfg
	c.AMQPURL = replaceHost(e.SB.AMQPURL, e.AMQPRelay.Addr())
	var args []string
	switch role {
	case "relay":
		args = []string{"relay"}
	case "worker":
		c.AMQPURL = replaceHost(e.SB.AMQPURL, e.AMQPWorker.Addr())
		args = []string{"worker"}
	case "cleanup":
		args = []string{"cleanup"}
	case "job":
		args = []string{"enqueue", "--per-kind", strconv.Itoa(e.Scenario.perKind())}
	case "migrate":
		args = []string{"migrate"}
	default:
		return nil, fmt.Errorf("unknown pod role %q", role)
	}
	e.mu.Lock()
	e.seq[role]++
	name := fmt.Sprintf("%s-%d", role, e.seq[role])
	e.mu.Unlock()
	c.Instance = name
	c.PGURL = withQuery(c.PGURL, "application_name", e.appName(name))
	var ps podSpec
	for _, o := range opts {
		o(&ps)
	}
	env := append(c.Env(), "OUTBOXCHAOS_LOG_FORMAT=json")
	if e.Bug != "" {
		env = append(env, canary.EnvVar+"="+e.Bug)
	}
	env = append(env, ps.env...)
	p, err := faults.StartPod(ctx, faults.PodSpec{Name: name, Binary: e.Bin, Args: append(args, ps.args...), Env: env}, e.TL)
	if err != nil {
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	e.mu.Lock()
	e.pods = append(e.pods, p)
	e.mu.Unlock()
	return p, nil
}

// Run starts a pod and waits for it to exit, returning an error unless it
// exits 0.
func (e *Env) Run(ctx context.Context, role string, opts ...PodOption) (*faults.Pod, error) {
	p, err := e.Start(ctx, role, opts...)
	if err != nil {
		return nil, err
	}
	if err := e.WaitExit(ctx, p, 60*time.Second); err != nil {
		return p, err
	}
	if p.ExitCode() != 0 {
		return p, fmt.Errorf("%s exited %d", p.Name(), p.ExitCode())
	}
	return p, nil
}

// Restart starts a fresh pod of the same role without its kill-point or
// failpoints, as a deployment would after a crash.
func (e *Env) Restart(ctx context.Context, p *faults.Pod) (*faults.Pod, error) {
	np, err := p.Restart(ctx, faults.RestartWithout(killpoint.EnvVar, killpoint.FailEnvVar))
	if err != nil {
		return nil, fmt.Errorf("restart %s: %w", p.Name(), err)
	}
	e.mu.Lock()
	e.pods = append(e.pods, np)
	e.mu.Unlock()
	e.Logf("harness", "restarted %s", p.Name())
	return np, nil
}

// WaitExit waits for p to exit within timeout.
func (e *Env) WaitExit(ctx context.Context, p *faults.Pod, timeout time.Duration) error {
	select {
	case <-p.Done():
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(timeout):
		return fmt.Errorf("%s did not exit within %s", p.Name(), timeout)
	}
}

// ExpectKilled waits for p to die at its kill-point and records the fault.
func (e *Env) ExpectKilled(ctx context.Context, p *faults.Pod, point string) error {
	if err := e.WaitExit(ctx, p, 30*time.Second); err != nil {
		e.Fault("kill-point", p.Name(), false, point)
		return fmt.Errorf("kill-point %s never fired: %w", point, err)
	}
	name, hit := p.Killpoint()
	fired := hit && name == point && p.ExitCode() == 137
	e.Fault("kill-point", p.Name(), fired, point)
	if !fired {
		return fmt.Errorf("%s exited %d without hitting kill-point %s", p.Name(), p.ExitCode(), point)
	}
	e.Logf("harness", "%s killed by SIGKILL at %s", p.Name(), point)
	return nil
}

// FailpointFired reports whether pod p's failpoint name fired.
func FailpointFired(p *faults.Pod, name string) bool {
	return strings.Contains(p.Output(), "FAILPOINT "+name+" hit")
}

// Fault records an injected fault and whether it fired.
func (e *Env) Fault(kind, target string, fired bool, detail string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.faultsIn = append(e.faultsIn, FaultRecord{Kind: kind, Target: target, At: time.Since(e.TL.Start()), Fired: fired, Detail: detail})
}

// NetFault records a network fault's report, with its window.
func (e *Env) NetFault(f *faults.Fault) {
	r := f.Report()
	e.mu.Lock()
	defer e.mu.Unlock()
	e.faultsIn = append(e.faultsIn, FaultRecord{Kind: r.Kind, Target: r.Target, Fired: r.Fired, Detail: r.Detail,
		Start: r.Start.Sub(e.TL.Start()), At: time.Since(e.TL.Start())})
}

// Faults returns the recorded faults.
func (e *Env) Faults() []FaultRecord {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]FaultRecord(nil), e.faultsIn...)
}

// Pods returns every pod started.
func (e *Env) Pods() []*faults.Pod {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]*faults.Pod(nil), e.pods...)
}

// Events returns the events of every pod.
func (e *Env) Events(name string) []faults.Event {
	var out []faults.Event
	for _, p := range e.Pods() {
		for _, ev := range p.Events() {
			if name == "" || ev.Name == name {
				out = append(out, ev)
			}
		}
	}
	return out
}

// WaitFor polls cond until it holds or timeout passes.
func (e *Env) WaitFor(ctx context.Context, timeout time.Duration, what string, cond func(ctx context.Context) (bool, error)) error {
	return faults.WaitFor(ctx, timeout, what, cond)
}

// Count runs a count query on the scenario's schema.
func (e *Env) Count(ctx context.Context, sql string, args ...any) (int, error) {
	var n int
	if err := e.Pool.QueryRow(ctx, sql, args...).Scan(&n); err != nil {
		return 0, fmt.Errorf("count: %w", err)
	}
	return n, nil
}

// WaitCount waits until the count query returns want.
func (e *Env) WaitCount(ctx context.Context, timeout time.Duration, want int, sql string, args ...any) error {
	return e.WaitFor(ctx, timeout, fmt.Sprintf("%d from %q", want, sql), func(ctx context.Context) (bool, error) {
		n, err := e.Count(ctx, sql, args...)
		return n == want, err
	})
}

// WaitEvent waits until some pod logged event name (matching match, if set).
func (e *Env) WaitEvent(ctx context.Context, timeout time.Duration, name string, match func(faults.Event) bool) error {
	return e.WaitFor(ctx, timeout, "event "+name, func(context.Context) (bool, error) {
		for _, ev := range e.Events(name) {
			if match == nil || match(ev) {
				return true, nil
			}
		}
		return false, nil
	})
}

// withChannel runs fn on a fresh channel of a fresh connection to the
// broker (direct, not through a proxy), closing both afterwards.
func (e *Env) withChannel(fn func(ch *amqp.Channel) error) error {
	conn, err := amqp.Dial(e.SB.AMQPURL)
	if err != nil {
		return fmt.Errorf("dial broker: %w", err)
	}
	defer conn.Close()
	ch, err := conn.Channel()
	if err != nil {
		return fmt.Errorf("open channel: %w", err)
	}
	defer ch.Close()
	return fn(ch)
}

// Supervise restarts p whenever it exits before StopPods — killed at a
// kill-point, or exiting non-zero because a dependency was unreachable at
// start-up — as a deployment would: without its kill-point or failpoints,
// after a short back-off, at most maxRestarts times.
func (e *Env) Supervise(p *faults.Pod) {
	go func() {
		for i := 0; i < maxRestarts; i++ {
			<-p.Done()
			if e.isStopping() {
				return
			}
			if name, hit := p.Killpoint(); hit {
				e.Fault("kill-point", p.Name(), true, name)
			}
			time.Sleep(restartBackoff) // a deployment's restart delay, not synchronisation
			if e.isStopping() {
				return
			}
			np, err := e.Restart(context.Background(), p)
			if err != nil {
				e.Logf("harness", "restart %s: %v", p.Name(), err)
				return
			}
			if e.isStopping() {
				_ = np.Kill()
				return
			}
			p = np
		}
	}()
}

const (
	maxRestarts    = 20
	restartBackoff = 200 * time.Millisecond
)

func (e *Env) isStopping() bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.stopping
}

// StopPods stops every running pod (SIGTERM, then SIGKILL).
func (e *Env) StopPods() {
	e.mu.Lock()
	e.stopping = true
	e.mu.Unlock()
	var wg sync.WaitGroup
	for _, p := range e.Pods() {
		select {
		case <-p.Done():
			continue
		default:
		}
		wg.Add(1)
		go func(p *faults.Pod) {
			defer wg.Done()
			_ = p.Stop(5 * time.Second)
		}(p)
	}
	wg.Wait()
}

func (e *Env) close() error {
	e.StopPods()
	if e.Net != nil {
		e.Net.Close()
	}
	if e.Vendor != nil {
		_ = e.Vendor.Close()
	}
	if e.Sink != nil {
		_ = e.Sink.Close()
	}
	if e.Pool != nil {
		e.Pool.Close()
	}
	if e.SB != nil {
		return e.SB.Close()
	}
	return nil
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

// SQL runs a statement on the scenario's schema (operator actions).
func (e *Env) SQL(ctx context.Context, sql string, args ...any) error {
	if _, err := e.Pool.Exec(ctx, sql, args...); err != nil {
		return fmt.Errorf("exec %q: %w", sql, err)
	}
	return nil
}

func parseURL(s string) (*url.URL, error) {
	u, err := url.Parse(s)
	if err != nil {
		return nil, fmt.Errorf("parse URL %s: %w", app.Redact(s), err)
	}
	return u, nil
}
