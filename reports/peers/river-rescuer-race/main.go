// Command river-rescuer-race shows River issue #1302 (fixed in v0.48.0,
// PR #1373) without any harness: the JobRescuer fetches a running job as
// stuck, the job then completes, and the rescuer's update overwrites the
// completion, so the job is worked a second time.
//
// The window is forced with a pgx tracer, not with sleeps: the job's Work
// waits until the rescuer's JobGetStuck query has returned rows, and the
// rescuer (inside that query's trace end) waits until the completer's
// JobSetStateIfRunningMany has returned. The rescuer runs every 30 s (not
// configurable), so the program takes about 35 s.
//
//	go run .                          # River v0.47.0 (go.mod): "worked 2 times" — the bug, exit 1
//	go run -modfile=go0512.mod .      # River v0.51.2: "worked 1 time", exit 0
//
// DATABASE_URL defaults to postgres://postgres@127.0.0.1:5432/test; the
// program works in a fresh schema and drops it.
package main

import (
	"context"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivermigrate"
)

type args struct{}

func (args) Kind() string { return "race" }

type worker struct {
	river.WorkerDefaults[args]
	works   atomic.Int32
	fetched chan struct{}
}

func (w *worker) Work(ctx context.Context, job *river.Job[args]) error {
	n := w.works.Add(1)
	fmt.Printf("work #%d (attempt %d)\n", n, job.Attempt)
	if n == 1 {
		<-w.fetched // hold the job until the rescuer has fetched it as stuck
	}
	return nil
}

type tracer struct {
	once, cOnce sync.Once
	fetched     chan struct{}
	completed   chan struct{}
}

type sqlKey struct{}

func (t *tracer) TraceQueryStart(ctx context.Context, _ *pgx.Conn, d pgx.TraceQueryStartData) context.Context {
	return context.WithValue(ctx, sqlKey{}, d.SQL)
}

func (t *tracer) TraceQueryEnd(ctx context.Context, _ *pgx.Conn, d pgx.TraceQueryEndData) {
	sql, _ := ctx.Value(sqlKey{}).(string)
	switch {
	case strings.Contains(sql, "JobGetStuck") && d.Err == nil && d.CommandTag.RowsAffected() > 0:
		t.once.Do(func() {
			fmt.Println("rescuer fetched the running job as stuck; holding it until the job completes")
			close(t.fetched)
		})
		select {
		case <-t.completed:
		case <-time.After(30 * time.Second):
		}
	case strings.Contains(sql, "JobSetStateIfRunningMany") && d.Err == nil:
		select {
		case <-t.fetched:
			t.cOnce.Do(func() { fmt.Println("completion written; releasing the rescuer"); close(t.completed) })
		default:
		}
	}
}

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "error:", err)
		os.Exit(2)
	}
}

func run() error {
	ctx := context.Background()
	base := os.Getenv("DATABASE_URL")
	if base == "" {
		base = "postgres://postgres@127.0.0.1:5432/test"
	}
	schema := fmt.Sprintf("river_race_%d", os.Getpid())
	admin, err := pgx.Connect(ctx, base)
	if err != nil {
		return err
	}
	defer admin.Close(ctx)
	if _, err := admin.Exec(ctx, "CREATE SCHEMA "+schema); err != nil {
		return err
	}
	defer admin.Exec(context.Background(), "DROP SCHEMA "+schema+" CASCADE")
	u, err := url.Parse(base)
	if err != nil {
		return err
	}
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()

	tr := &tracer{fetched: make(chan struct{}), completed: make(chan struct{})}
	pc, err := pgxpool.ParseConfig(u.String())
	if err != nil {
		return err
	}
	pc.ConnConfig.Tracer = tr
	pool, err := pgxpool.NewWithConfig(ctx, pc)
	if err != nil {
		return err
	}
	defer pool.Close()
	m, err := rivermigrate.New(riverpgxv5.New(pool), nil)
	if err != nil {
		return err
	}
	if _, err := m.Migrate(ctx, rivermigrate.DirectionUp, nil); err != nil {
		return err
	}
	w := &worker{fetched: tr.fetched}
	workers := river.NewWorkers()
	river.AddWorker(workers, w)
	client, err := river.NewClient(riverpgxv5.New(pool), &river.Config{
		Queues:               map[string]river.QueueConfig{river.QueueDefault: {MaxWorkers: 10}},
		Workers:              workers,
		JobTimeout:           2 * time.Second,
		RescueStuckJobsAfter: 3 * time.Second,
		Logger:               slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})),
	})
	if err != nil {
		return err
	}
	if err := client.Start(ctx); err != nil {
		return err
	}
	defer client.Stop(context.Background())
	if _, err := client.Insert(ctx, args{}, nil); err != nil {
		return err
	}
	select {
	case <-tr.completed:
	case <-time.After(60 * time.Second):
		return fmt.Errorf("the rescuer never fetched the job within 60 s")
	}
	// A rescued job is retried after its retry delay (about 1 s for the
	// first attempt); give it 10 s to be worked again.
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) && w.works.Load() < 2 {
		time.Sleep(100 * time.Millisecond)
	}
	var state string
	if err := pool.QueryRow(ctx, "SELECT state::text FROM river_job").Scan(&state); err != nil {
		return err
	}
	n := w.works.Load()
	fmt.Printf("worked %d time(s); job state now %s\n", n, state)
	if n > 1 {
		fmt.Println("BUG: the rescuer overwrote a completed job and it was worked again")
		os.Exit(1)
	}
	return nil
}
