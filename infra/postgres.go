package infra

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
)

// Database and credentials of the Postgres container.
const (
	pgDatabase = "test"
	pgUser     = "postgres"
	pgPassword = "postgres"
)

// startPostgres runs Postgres on a free port of 127.0.0.1 and waits until
// it answers a query.
func (in *Containers) startPostgres(ctx context.Context) error {
	ports, err := freePorts(1)
	if err != nil {
		return err
	}
	port := strconv.Itoa(ports[0])
	t0 := time.Now()
	ctr, err := in.run(ctx, "postgres", PostgresImage(),
		[]string{"postgres", "-c", "port=" + port, "-c", "listen_addresses=127.0.0.1", "-c", "fsync=on"},
		map[string]string{"POSTGRES_DB": pgDatabase, "POSTGRES_USER": pgUser, "POSTGRES_PASSWORD": pgPassword, "PGPORT": port})
	if err != nil {
		return err
	}
	url := fmt.Sprintf("postgres://%s:%s@127.0.0.1:%s/%s?sslmode=disable", pgUser, pgPassword, port, pgDatabase)
	n := &Node{Name: "postgres", URL: url, ctr: ctr, ready: func(ctx context.Context) error { return pgReady(ctx, url) }}
	in.add(n)
	if err := in.waitReady(ctx, n); err != nil {
		return err
	}
	n.Started = time.Since(t0)
	in.o.Log.Info("postgres up", "url", "127.0.0.1:"+port, "took", n.Started.Round(time.Millisecond).String())
	return nil
}

// pgReady connects and runs a query: the database serves (after a crash,
// only once its recovery is done).
func pgReady(ctx context.Context, url string) error {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		return fmt.Errorf("connect: %w", err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	var one int
	if err := conn.QueryRow(ctx, "SELECT 1").Scan(&one); err != nil {
		return fmt.Errorf("query: %w", err)
	}
	return nil
}
