package rig

import (
	"errors"
	"fmt"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"
)

// TestUnavailable: a database that went away is waited for; one that
// answered with a refusal is not.
func TestUnavailable(t *testing.T) {
	for _, c := range []struct {
		err  error
		want bool
	}{
		{nil, false},
		{fmt.Errorf("seed: %w", &pgconn.PgError{Code: "57P01", Message: "terminating connection due to unexpected postmaster exit"}), true},
		{&pgconn.PgError{Code: "08006"}, true},
		{&pgconn.PgError{Code: "23505", Message: "duplicate key"}, false},
		{&pgconn.PgError{Code: "42P01", Message: "relation does not exist"}, false},
		{errors.New("failed to deallocate cached statement(s): conn closed"), true},
		{errors.New("seed member 1: bad input"), false},
	} {
		if got := Unavailable(c.err); got != c.want {
			t.Errorf("Unavailable(%v) = %v, want %v", c.err, got, c.want)
		}
	}
}
