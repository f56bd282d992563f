package main

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/prometheus/procfs"

	"github.com/outboxchaos/outboxchaos/bench"
	"github.com/outboxchaos/outboxchaos/reports"
	"github.com/outboxchaos/outboxchaos/scenarios"
	"github.com/outboxchaos/outboxchaos/scenarios/explore"
	"github.com/outboxchaos/outboxchaos/system/sandbox"
)

// measureExplore runs n random schedules drawn from seed, one at a time,
// with bin (the outboxchaos binary) as the pods, and sums what they cost.
// Each schedule runs twice, one run after the other: on a schema of its
// own, created and dropped (as without the pool), and on a kept one
// from a pool (as explore, scenario run, crashpoints and report run), so
// the two rows are measured side by side in one bench run.
func measureExplore(ctx context.Context, bin string, n int, seed int64, pgURL, amqpURL string, progress io.Writer) *bench.ExploreCost {
	o := scenarios.DefaultOptions()
	o.PGURL, o.AMQPURL, o.Bin, o.Seed, o.Artifacts = pgURL, amqpURL, bin, seed, ""
	e := &bench.ExploreCost{Seed: seed}
	e.PerConnection, e.ConnProbe = connectionCost(ctx, pgURL, 40, progress)
	pool := sandbox.NewPool(pgURL, amqpURL, 0)
	defer func() {
		if err := pool.Close(); err != nil {
			fmt.Fprintf(progress, "[bench] drop the kept schemas: %v\n", err)
		}
	}()
	modes := []struct {
		what  string
		pool  *sandbox.Pool
		runs  []scenarios.Result
		conns int64
	}{{what: "random schedules, a new schema each"}, {what: "random schedules, kept schemas", pool: pool}}
	d := explore.NewRandDraw(seed)
	measured := true
	for i := 0; i < n && ctx.Err() == nil; i++ {
		sch := explore.Generate(d)
		for m := range modes {
			o.Sandboxes = modes[m].pool
			before, err := sessions(ctx, pgURL)
			if err != nil && measured {
				fmt.Fprintf(progress, "[bench] connections per schedule not measured: %v\n", err)
				measured = false
			}
			res := scenarios.Run(ctx, sch.Scenario(fmt.Sprintf("bench-schedule-%d", i+1)), o)
			if after, err := sessions(ctx, pgURL); err == nil && measured {
				modes[m].conns += after - before - 1 // the reading's own connection
			}
			switch res.Outcome() {
			case scenarios.OutcomeFail:
				e.Failed++
			case scenarios.OutcomeError:
				e.NotJudged++
			}
			fmt.Fprintf(progress, "[bench] schedule %d/%d, %s: %s; %s\n", i+1, n, modes[m].what, res.Outcome(), res.Cost)
			modes[m].runs = append(modes[m].runs, res)
		}
	}
	for _, m := range modes {
		e.Rows = append(e.Rows, reports.CostOf(m.what, m.runs))
		if measured {
			e.Sessions = append(e.Sessions, m.conns)
		}
	}
	return e
}

// sessions reads how many sessions the database has had
// (pg_stat_database.sessions, PostgreSQL 14 and later); the reading's own
// connection counts once.
func sessions(ctx context.Context, pgURL string) (int64, error) {
	conn, err := pgx.Connect(ctx, pgURL)
	if err != nil {
		return 0, fmt.Errorf("connect: %w", err)
	}
	defer conn.Close(ctx)
	var n int64
	if err := conn.QueryRow(ctx, `SELECT sessions FROM pg_stat_database WHERE datname = current_database()`).Scan(&n); err != nil {
		return 0, fmt.Errorf("read pg_stat_database.sessions: %w", err)
	}
	return n, nil
}

// connectionCost opens and closes n connections one after the other and
// returns the Postgres CPU each cost, or 0 when it cannot tell: the
// backend's own time on a CPU (/proc/PID/schedstat, nanoseconds, read
// just before it closes) plus the postmaster's, which forks and reaps it.
// Only those processes count: the cluster's background workers (autovacuum
// after the schedules' dropped schemas, the checkpointer) are not the
// connection's cost, and counting every postgres process made a quiet
// machine's 5 ms read as 39 ms.
func connectionCost(ctx context.Context, pgURL string, n int, progress io.Writer) (time.Duration, int) {
	var total, postmaster0 time.Duration
	postmaster := 0
	for i := 0; i < n; i++ {
		conn, err := pgx.Connect(ctx, pgURL)
		if err != nil {
			fmt.Fprintf(progress, "[bench] connection cost not measured: %v\n", err)
			return 0, 0
		}
		var pid int
		if err := conn.QueryRow(ctx, "SELECT pg_backend_pid()").Scan(&pid); err != nil {
			conn.Close(ctx)
			return 0, 0
		}
		if postmaster == 0 {
			if postmaster = parentOf(pid); postmaster == 0 {
				conn.Close(ctx)
				fmt.Fprintf(progress, "[bench] connection cost not measured: no /proc entry for backend %d (Postgres elsewhere?)\n", pid)
				return 0, 0
			}
			postmaster0 = onCPU(postmaster)
		}
		total += onCPU(pid)
		conn.Close(ctx)
	}
	total += onCPU(postmaster) - postmaster0
	return total / time.Duration(n), n
}

// onCPU is how long process pid has run on a CPU (/proc/PID/schedstat),
// or 0.
func onCPU(pid int) time.Duration {
	p, err := procfs.NewProc(pid)
	if err != nil {
		return 0
	}
	st, err := p.Schedstat()
	if err != nil {
		return 0
	}
	return time.Duration(st.RunningNanoseconds)
}

// parentOf is pid's parent, or 0.
func parentOf(pid int) int {
	p, err := procfs.NewProc(pid)
	if err != nil {
		return 0
	}
	st, err := p.Stat()
	if err != nil {
		return 0
	}
	return st.PPID
}
