package rig

import (
	"context"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5/pgxpool"
)

// PodBackend is what PostgreSQL says about one pod's connection.
type PodBackend struct {
	Pod       string
	Query     string
	BlockedBy []uint32
}

// PodBackends lists the connections of the pods named role-N whose
// application_name is app+"/"+pod (each pod names itself so).
func PodBackends(ctx context.Context, pool *pgxpool.Pool, app, role string) ([]PodBackend, error) {
	rows, err := pool.Query(ctx, `SELECT application_name, query, pg_blocking_pids(pid)
		FROM pg_stat_activity WHERE application_name LIKE $1`, app+"/"+role+"-%")
	if err != nil {
		return nil, fmt.Errorf("list the pods' connections: %w", err)
	}
	defer rows.Close()
	var out []PodBackend
	for rows.Next() {
		var b PodBackend
		if err := rows.Scan(&b.Pod, &b.Query, &b.BlockedBy); err != nil {
			return nil, fmt.Errorf("list the pods' connections: %w", err)
		}
		b.Pod = strings.TrimPrefix(b.Pod, app+"/")
		out = append(out, b)
	}
	return out, rows.Err()
}
