package rig

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
)

// Unavailable reports whether err says the database did not answer (its
// process crashed or was stopped, its link cut) rather than refused what
// was asked: a connection that could not be made or was lost, or a
// server going down (SQLSTATE classes 08 and 57P).
func Unavailable(err error) bool {
	if err == nil {
		return false
	}
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return strings.HasPrefix(pe.Code, "08") || strings.HasPrefix(pe.Code, "57P")
	}
	var ce *pgconn.ConnectError
	var ne net.Error
	return errors.As(err, &ce) || errors.As(err, &ne) || pgconn.SafeToRetry(err) ||
		errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		strings.Contains(err.Error(), "conn closed")
}

// UntilDBAnswers runs fn, an idempotent write of the harness's own,
// again while the database does not answer (a fault of the run's own
// took it away), until it succeeds, fails for another reason, or ctx
// ends; logf says once that it waits.
func UntilDBAnswers(ctx context.Context, logf func(format string, args ...any), what string, fn func() error) error {
	backoff := 50 * time.Millisecond
	logged := false
	for {
		err := fn()
		if !Unavailable(err) || ctx.Err() != nil {
			return err
		}
		if !logged {
			logf("%s: the database does not answer (%v); again until it does", what, err)
			logged = true
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s: %w (last: %w)", what, ctx.Err(), err)
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, time.Second)
	}
}
