package faults

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
)

// Deployer is a world that runs a role's pods as a deployment: it can roll
// them, as a new release does. A run's world is one: it rolls the pods it
// runs as a deployment (the simulator's workers).
type Deployer interface {
	// RollingRestart starts a successor for each running pod of role, then
	// stops the old one (SIGTERM: a send in flight completes first), and
	// names the pods it replaced.
	RollingRestart(ctx context.Context, role string) ([]string, error)
}

// errNoDeployment: the world starts its pods itself (a scenario's steps).
var errNoDeployment = errors.New("this world runs no deployment to roll")

// RollingRestart is a deploy: every pod of the Deployment's role is
// replaced, one at a time, by a new one. It fired when at least one pod
// was replaced; Recover does nothing (the new release stays).
type RollingRestart struct {
	Deployment string

	mu       sync.Mutex
	replaced []string
}

// Family is "rolling-restart".
func (r *RollingRestart) Family() string { return KindRollingRestart }

// Target is the deployment.
func (r *RollingRestart) Target() string { return r.Deployment }

// Inject rolls the deployment.
func (r *RollingRestart) Inject(ctx context.Context, w World) error {
	d, ok := w.(Deployer)
	if !ok {
		return errNoDeployment
	}
	names, err := d.RollingRestart(ctx, r.Deployment)
	r.mu.Lock()
	r.replaced = names
	r.mu.Unlock()
	return err
}

// Momentary: the release is done as it is injected.
func (*RollingRestart) Momentary() {}

// Recover does nothing: a release is not rolled back.
func (r *RollingRestart) Recover(context.Context, World) error { return nil }

// Fired reports whether a pod was replaced.
func (r *RollingRestart) Fired(World) (bool, string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.replaced) == 0 {
		return false, "no pod of " + r.Deployment + " was running"
	}
	return true, "replaced " + strings.Join(r.replaced, ", ")
}

func (r *RollingRestart) String() string { return "rolling restart of " + r.Deployment }

func buildRollingRestart(s Spec) (Fault, error) {
	if s.Deployment == "" {
		return nil, fmt.Errorf("needs deployment (a role, e.g. worker)")
	}
	return &RollingRestart{Deployment: s.Deployment}, nil
}
