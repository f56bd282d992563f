package scenarios

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/outboxchaos/outboxchaos/faults"
	"github.com/outboxchaos/outboxchaos/system/canary"
	"github.com/outboxchaos/outboxchaos/system/crashpoint"
	"github.com/outboxchaos/outboxchaos/system/killpoint"
)

// podSpec is what a start step asks of one pod beyond its role.
type podSpec struct {
	env  []string // extra KEY=VALUE settings (armed faults among them)
	args []string // extra arguments
	link string   // the RabbitMQ link, if not the role's own
	// command, if set, is run instead of the role's binary (a
	// command-line relay's own migration).
	command []string
}

// Start starts a pod of role relay, worker, cleanup, reconciler, job
// (enqueue) or migrate, named role-N.
func (e *Env) Start(ctx context.Context, role string, ps podSpec) (*faults.Pod, error) {
	c := e.Cfg
	link := "rabbitmq-relay"
	var args []string
	switch role {
	case "relay":
		args = []string{"relay"}
		c.PGURL = replaceHost(c.PGURL, e.PGRelay.Addr())
	case "worker":
		link = "rabbitmq-worker"
		c.PGURL = replaceHost(c.PGURL, e.PGWorker.Addr())
		args = []string{"worker"}
	case "cleanup":
		args = []string{"cleanup"}
	case "reconciler":
		args = []string{"reconcile"}
	case "job":
		args = []string{"enqueue", "--per-kind", strconv.Itoa(e.Scenario.perKind()), "--kinds", kindsArg(e.Scenario.Kinds)}
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
	if ps.link != "" {
		link = ps.link
	}
	var err error
	if c.AMQPURL, err = e.amqpVia(link); err != nil {
		return nil, err
	}
	env := append(c.Env(), "OUTBOXCHAOS_LOG_FORMAT=json")
	if e.Bug != "" {
		env = append(env, canary.EnvVar+"="+e.Bug)
	}
	env = append(env, e.contractEnv(role)...)
	env = append(env, ps.env...)
	bin, args := e.podBinary(role, append(args, ps.args...))
	if len(ps.command) > 0 {
		bin, args = ps.command[0], ps.command[1:]
	}
	p, err := faults.StartPod(ctx, faults.PodSpec{Name: name, Binary: bin, Args: args, Env: env}, e.TL)
	if err != nil {
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	e.mu.Lock()
	e.pods = append(e.pods, p)
	e.meta[name] = podMeta{role: role, spec: ps}
	e.mu.Unlock()
	return p, nil
}

// podMeta is how a pod was started: what Replace starts again.
type podMeta struct {
	role string
	spec podSpec
}

// faultVars are the variables that arm a pod's faults; a replacement is
// started without them.
var faultVars = []string{killpoint.EnvVar, killpoint.FailEnvVar, crashpoint.EnvVar, crashpoint.TraceEnvVar}

// Replace starts a new pod of p's role under a new name (role-N+1, so a new
// instance name, as a pod a deployment restarts after a crash gets in
// production), with p's settings and arguments but without its faults.
func (e *Env) Replace(ctx context.Context, p *faults.Pod) (*faults.Pod, error) {
	e.mu.Lock()
	m, ok := e.meta[p.Name()]
	e.mu.Unlock()
	if !ok {
		return nil, fmt.Errorf("replace %s: not started by this run", p.Name())
	}
	ps := podSpec{args: m.spec.args, link: m.spec.link}
	for _, kv := range m.spec.env {
		if !slices.Contains(faultVars, strings.SplitN(kv, "=", 2)[0]) {
			ps.env = append(ps.env, kv)
		}
	}
	if err := p.Kill(); err != nil {
		return nil, fmt.Errorf("replace %s: %w", p.Name(), err)
	}
	np, err := e.Start(ctx, m.role, ps)
	if err != nil {
		return nil, fmt.Errorf("replace %s: %w", p.Name(), err)
	}
	e.Logf("harness", "replaced %s by %s", p.Name(), np.Name())
	return np, nil
}

// roleOf is the role pod name was started as.
func (e *Env) roleOf(name string) string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.meta[name].role
}

// Run starts a pod and waits for it to exit, returning an error unless it
// exits 0.
func (e *Env) Run(ctx context.Context, role string, ps podSpec) (*faults.Pod, error) {
	p, err := e.Start(ctx, role, ps)
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

// Pods returns every pod started.
func (e *Env) Pods() []*faults.Pod {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]*faults.Pod(nil), e.pods...)
}

// Pod returns the pod called name (the latest, if restarted).
func (e *Env) Pod(name string) (*faults.Pod, error) {
	ps := e.Pods()
	for i := len(ps) - 1; i >= 0; i-- {
		if ps[i].Name() == name {
			return ps[i], nil
		}
	}
	return nil, fmt.Errorf("no pod %q", name)
}

// Supervise restarts p whenever it exits before StopPods — killed at a
// kill-point, or exiting non-zero because a dependency was unreachable at
// start-up — as a deployment would: without its kill-point or failpoints,
// after a short back-off, at most maxRestarts times.
func (e *Env) Supervise(p *faults.Pod) {
	go func() {
		backoff := restartBackoff
		for i := 0; i < maxRestarts; i++ {
			<-p.Done()
			if e.isStopping() {
				return
			}
			// A deployment's restart delay, doubling as a crash loop's
			// does (not synchronisation): a pod that cannot start while
			// the broker or database restarts keeps being restarted.
			time.Sleep(backoff)
			backoff = min(2*backoff, maxRestartBackoff)
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
	maxRestarts       = 20
	restartBackoff    = 200 * time.Millisecond
	maxRestartBackoff = 2 * time.Second
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

// started reports whether a pod of role was started in this run.
func (e *Env) started(role string) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.seq[role] > 0
}
