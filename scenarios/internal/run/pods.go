package run

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/outboxchaos/outboxchaos/faults"
	"github.com/outboxchaos/outboxchaos/rig"
	"github.com/outboxchaos/outboxchaos/system/canary"
	"github.com/outboxchaos/outboxchaos/system/crashpoint"
	"github.com/outboxchaos/outboxchaos/system/killpoint"
	"github.com/outboxchaos/outboxchaos/system/notification"
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
func (e *Env) Start(ctx context.Context, role string, ps podSpec) (*rig.Pod, error) {
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
		c.PGURL = replaceHost(c.PGURL, e.PGJob.Addr())
		args = []string{"enqueue", "--per-kind", strconv.Itoa(e.Scenario.Members()), "--kinds", kindsArg(e.Scenario.Kinds)}
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
	if e.CoverDir != "" {
		env = append(env, "GOCOVERDIR="+e.CoverDir)
	}
	env = append(env, e.contractEnv(role)...)
	env = append(env, e.natsEnv(role)...)
	env = append(env, ps.env...)
	args = append(args, ps.args...)
	job := -1
	if role == "job" {
		var err error
		if args, job, err = e.beforeJob(ctx, args, ps.env); err != nil {
			return nil, err
		}
	}
	e.noteSkew(name, ps.env)
	bin, args := e.podBinary(role, args)
	if len(ps.command) > 0 {
		bin, args = ps.command[0], ps.command[1:]
	}
	p, err := rig.StartPod(ctx, rig.PodSpec{Name: name, Binary: bin, Args: args, Env: env}, e.TL)
	if err != nil {
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	if job >= 0 {
		e.watchJob(job, p, ps.env)
	}
	e.sup.Add(p)
	e.mu.Lock()
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

// pointVars are the variables whose value is a list of points (the
// grammar "name:N,name:M"): two faults of one kind armed in one pod are
// one entry, each point in it.
var pointVars = []string{killpoint.EnvVar, killpoint.FailEnvVar, killpoint.PauseEnvVar}

// joinPointVars joins the entries of env that set one of pointVars into
// the first of them, their values comma-separated: a process sees only the
// last of several entries of one variable, and would arm only the last
// fault while the ledger records them all.
func joinPointVars(env []string) []string {
	var out []string
	at := map[string]int{}
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		i, seen := at[k]
		switch {
		case !slices.Contains(pointVars, k):
			out = append(out, kv)
		case !seen:
			at[k] = len(out)
			out = append(out, kv)
		case v != "":
			out[i] += "," + v
		}
	}
	return out
}

// without is ps with none of the environment variables named in vars:
// the same pod started again without the faults they arm.
func (ps podSpec) without(vars ...string) podSpec {
	out := podSpec{args: ps.args, link: ps.link, command: ps.command}
	for _, kv := range ps.env {
		if !slices.Contains(vars, strings.SplitN(kv, "=", 2)[0]) {
			out.env = append(out.env, kv)
		}
	}
	return out
}

// Replace starts a new pod of p's role under a new name (role-N+1, so a new
// instance name, as a pod a deployment restarts after a crash gets in
// production), with p's settings and arguments but without its faults.
func (e *Env) Replace(ctx context.Context, p *rig.Pod) (*rig.Pod, error) {
	e.mu.Lock()
	m, ok := e.meta[p.Name()]
	e.mu.Unlock()
	if !ok {
		return nil, fmt.Errorf("replace %s: not started by this run", p.Name())
	}
	ps := m.spec.without(faultVars...)
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
func (e *Env) Run(ctx context.Context, role string, ps podSpec) (*rig.Pod, error) {
	p, err := e.Start(ctx, role, ps)
	if err != nil {
		return nil, err
	}
	return p, e.finish(ctx, p)
}

// finish waits for a started pod to exit, returning an error unless it
// exits 0.
func (e *Env) finish(ctx context.Context, p *rig.Pod) error {
	if err := e.WaitExit(ctx, p, 60*time.Second); err != nil {
		return err
	}
	if p.ExitCode() != 0 {
		return fmt.Errorf("%s exited %d", p.Name(), p.ExitCode())
	}
	return nil
}

// Restart starts a fresh pod of the same role without its kill-point or
// failpoints, as a deployment would after a crash.
func (e *Env) Restart(ctx context.Context, p *rig.Pod) (*rig.Pod, error) {
	np, err := p.Restart(ctx, rig.RestartWithout(killpoint.EnvVar, killpoint.FailEnvVar))
	if err != nil {
		return nil, fmt.Errorf("restart %s: %w", p.Name(), err)
	}
	e.sup.Add(np)
	e.Logf("harness", "restarted %s", p.Name())
	return np, nil
}

// WaitExit waits for p to exit within timeout.
func (e *Env) WaitExit(ctx context.Context, p *rig.Pod, timeout time.Duration) error {
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
func (e *Env) Pods() []*rig.Pod { return e.sup.Pods() }

// Pod returns the pod called name (the latest, if restarted).
func (e *Env) Pod(name string) (*rig.Pod, error) { return e.sup.Pod(name) }

// Supervise restarts p whenever it exits before StopPods, as a deployment
// would: without its kill-point or failpoints (Restart), after a short
// back-off (rig.Supervisor).
func (e *Env) Supervise(p *rig.Pod) { e.sup.Supervise(p, e.Restart) }

// StopPods stops every running pod (SIGTERM, then SIGKILL).
func (e *Env) StopPods() { e.sup.StopAll(5 * time.Second) }

// End ends a run's driving in the one order every driver keeps: the pods
// stop first, then every fault eng still holds is recovered. A pod still
// running when a fault goes away (a vendor that answers again, a frozen
// pod continued, a link back) could change the outcome after the last
// step; this way the state the run is judged on is fixed before.
func (e *Env) End(ctx context.Context, eng *faults.Engine) error {
	e.StopPods()
	return eng.RecoverAll(ctx)
}

// started reports whether a pod of role was started in this run.
func (e *Env) started(role string) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.seq[role] > 0
}

func kindsArg(kinds []notification.Kind) string {
	if len(kinds) == 0 {
		return "all"
	}
	var out []string
	for _, k := range kinds {
		out = append(out, string(k))
	}
	return strings.Join(out, ",")
}
