package run

import (
	"context"
	"fmt"

	"github.com/outboxchaos/outboxchaos/history"
	"github.com/outboxchaos/outboxchaos/rig"
	"github.com/outboxchaos/outboxchaos/scenarios/scenario"
	"github.com/outboxchaos/outboxchaos/system/app"
)

// Open builds a run's world called name for a driver other than Run (the
// simulator): the schema migrated, the fake vendor, the alert sink and a
// proxy per link up, no pod started. The driver ends it as Run does (End,
// then Close).
func Open(ctx context.Context, name string, o Options) (*Env, error) {
	s := &scenario.Scenario{Name: name, Row: "driven", Description: "a world its own driver runs", Steps: []scenario.Step{}}
	if err := s.Validate(); err != nil {
		return nil, fmt.Errorf("open world: %w", err)
	}
	e, err := newEnv(ctx, s, o)
	if err != nil {
		if e != nil {
			_ = e.close()
		}
		return nil, err
	}
	c := e.Cfg
	c.PGURL = e.SB.PGURL
	if err := app.Migrate(ctx, c); err != nil {
		_ = e.close()
		return nil, err
	}
	return e, nil
}

// Close stops every pod, closes the proxies, the vendor and the sink, and
// drops the run's schema and queues.
func (e *Env) Close() error { return e.close() }

// StartRole starts a pod of role (see Start) with extra KEY=VALUE
// settings and extra arguments.
func (e *Env) StartRole(ctx context.Context, role string, env, args []string) (*rig.Pod, error) {
	return e.Start(ctx, role, podSpec{env: env, args: args})
}

// History returns every pod's events as the checker's history.
func (e *Env) History() []history.Event { return e.history() }
