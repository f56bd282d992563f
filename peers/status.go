package peers

import (
	"context"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"
)

// The peer's view of a message, in the outbox's words.
const (
	Published = "PUBLISHED" // the peer marked it done
	Pending   = "PENDING"   // the peer still owes it
	Failed    = "FAILED"    // the peer gave up on it
)

// Querier runs a query (a pool or a connection).
type Querier interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
}

// Status returns p's view of each outbox id it holds a message for, read
// with p.Status. A table not created yet reads as empty. With several
// messages for one id, PUBLISHED wins over PENDING over FAILED. A peer
// that marks our own outbox (no Status query) has no view of its own: nil.
func Status(ctx context.Context, db Querier, p Peer) (map[int64]string, error) {
	if p.Status == "" {
		return nil, nil
	}
	rows, err := db.Query(ctx, p.Status)
	if err != nil {
		if strings.Contains(err.Error(), "does not exist") {
			return map[int64]string{}, nil
		}
		return nil, fmt.Errorf("read %s's outbox: %w", p.Name, err)
	}
	defer rows.Close()
	rank := map[string]int{Failed: 0, Pending: 1, Published: 2}
	out := map[int64]string{}
	for rows.Next() {
		var id *int64
		var st string
		if err := rows.Scan(&id, &st); err != nil {
			return nil, fmt.Errorf("scan %s's outbox: %w", p.Name, err)
		}
		if id == nil {
			continue
		}
		if old, ok := out[*id]; !ok || rank[st] > rank[old] {
			out[*id] = st
		}
	}
	if err := rows.Err(); err != nil {
		if strings.Contains(err.Error(), "does not exist") {
			return map[int64]string{}, nil
		}
		return nil, fmt.Errorf("read %s's outbox: %w", p.Name, err)
	}
	return out, nil
}
