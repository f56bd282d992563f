package seam

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/outboxchaos/outboxchaos/system/killpoint"
)

// Rule fires on every query whose SQL contains all of Match: before it is
// sent or, with After, once it has returned (also on error, unless OnlyOK).
// Hook, if set, runs first (end is nil before the query); then Point is hit
// as a kill-point (SIGKILL when armed).
type Rule struct {
	Name   string // for the log
	Match  []string
	After  bool
	Point  string
	Hook   func(ctx context.Context, sql string, end *pgx.TraceQueryEndData)
	OnlyOK bool // After: only when the query succeeded
}

// Tracer is a pgx QueryTracer that hits kill-points at the peer's own
// statements (its claim, its "done" write), so a peer is crashed at named
// points without forking its code.
type Tracer struct {
	Rules []Rule
}

type traceKey struct{}

// TraceQueryStart implements pgx.QueryTracer.
func (t *Tracer) TraceQueryStart(ctx context.Context, _ *pgx.Conn, d pgx.TraceQueryStartData) context.Context {
	for _, r := range t.Rules {
		if !r.After && matches(d.SQL, r.Match) {
			r.fire(ctx, d.SQL, nil)
		}
	}
	return context.WithValue(ctx, traceKey{}, d.SQL)
}

// TraceQueryEnd implements pgx.QueryTracer.
func (t *Tracer) TraceQueryEnd(ctx context.Context, _ *pgx.Conn, d pgx.TraceQueryEndData) {
	sql, _ := ctx.Value(traceKey{}).(string)
	for _, r := range t.Rules {
		if r.After && matches(sql, r.Match) && (!r.OnlyOK || d.Err == nil) {
			r.fire(ctx, sql, &d)
		}
	}
}

func (r Rule) fire(ctx context.Context, sql string, end *pgx.TraceQueryEndData) {
	if r.Hook != nil {
		r.Hook(ctx, sql, end)
	}
	if r.Point != "" {
		killpoint.Hit(r.Point)
	}
}

func matches(sql string, all []string) bool {
	for _, m := range all {
		if !strings.Contains(sql, m) {
			return false
		}
	}
	return len(all) > 0
}

// OpenPool opens the peer's pool on url with tracer (nil: none) and checks
// the database answers within 5 s.
func OpenPool(ctx context.Context, url string, tracer pgx.QueryTracer, maxConns int32) (*pgxpool.Pool, error) {
	pc, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, fmt.Errorf("bad Postgres URL: %w", err)
	}
	pc.ConnConfig.ConnectTimeout = 5 * time.Second
	if tracer != nil {
		pc.ConnConfig.Tracer = tracer
	}
	if maxConns > 0 {
		pc.MaxConns = maxConns
	}
	pool, err := pgxpool.NewWithConfig(ctx, pc)
	if err != nil {
		return nil, fmt.Errorf("open the peer's Postgres pool: %w", err)
	}
	pctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if err := pool.Ping(pctx); err != nil {
		pool.Close()
		return nil, fmt.Errorf("Postgres unreachable: %w", err)
	}
	return pool, nil
}
