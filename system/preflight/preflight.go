// Package preflight checks, before a command starts any work, that every
// service it needs answers and accepts its credentials, and says which one
// does not and why: unreachable (nothing answers, or not in time),
// authentication failed (it answered and refused the user or password), or
// refused for another reason it gave. A harness run that cannot reach its
// services is not judged (exit 3), never reported as the pipeline breaking
// its contract.
package preflight

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	amqp "github.com/rabbitmq/amqp091-go"
)

// Reasons a service failed its check.
const (
	Unreachable = "unreachable"
	AuthFailed  = "authentication failed"
	Refused     = "refused"
)

// Error is a service that failed its check.
type Error struct {
	Service string // "Postgres", "RabbitMQ"
	URL     string // redacted
	Setting string // the flag and variable that choose it
	Reason  string // Unreachable, AuthFailed or Refused
	Err     error
}

func (e *Error) Error() string {
	return fmt.Sprintf("%s at %s: %s (set %s): %v", e.Service, e.URL, e.Reason, e.Setting, e.Err)
}

func (e *Error) Unwrap() error { return e.Err }

// Timeout bounds each service's check.
const Timeout = 5 * time.Second

// Postgres connects to rawURL once and runs SELECT 1.
func Postgres(ctx context.Context, rawURL string) error {
	ctx, cancel := context.WithTimeout(ctx, Timeout)
	defer cancel()
	err := func() error {
		cc, err := pgx.ParseConfig(rawURL)
		if err != nil {
			return err
		}
		cc.ConnectTimeout = Timeout
		conn, err := pgx.ConnectConfig(ctx, cc)
		if err != nil {
			return err
		}
		defer conn.Close(context.WithoutCancel(ctx))
		var one int
		return conn.QueryRow(ctx, "SELECT 1").Scan(&one)
	}()
	if err == nil {
		return nil
	}
	return &Error{Service: "Postgres", URL: redact(rawURL), Setting: "OUTBOXCHAOS_PG_URL or --pg-url", Reason: PostgresReason(err), Err: err}
}

// PostgresReason classifies a Postgres connection error: SQLSTATE class 28
// (invalid authorization: bad password, unknown role) is AuthFailed, any
// other answer from the server is Refused (no such database, too many
// connections), and no answer at all is Unreachable.
func PostgresReason(err error) string {
	var pe *pgconn.PgError
	switch {
	case errors.As(err, &pe) && strings.HasPrefix(pe.Code, "28"):
		return AuthFailed
	case errors.As(err, &pe):
		return Refused
	default:
		return Unreachable
	}
}

// RabbitMQ opens and closes one AMQP connection to each node of setting (a
// comma-separated list of URLs).
func RabbitMQ(ctx context.Context, setting string) error {
	var errs []error
	for _, u := range strings.Split(setting, ",") {
		u = strings.TrimSpace(u)
		if u == "" {
			continue
		}
		if err := rabbitNode(ctx, u); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

func rabbitNode(ctx context.Context, u string) error {
	type answer struct {
		c   *amqp.Connection
		err error
	}
	ch := make(chan answer, 1)
	go func() {
		c, err := amqp.DialConfig(u, amqp.Config{Dial: amqp.DefaultDial(Timeout)})
		ch <- answer{c, err}
	}()
	var err error
	select {
	case a := <-ch:
		if a.err == nil {
			return a.c.Close()
		}
		err = a.err
	case <-ctx.Done():
		err = ctx.Err()
		go func() { // close a connection that answers too late
			if a := <-ch; a.err == nil {
				_ = a.c.Close()
			}
		}()
	}
	return &Error{Service: "RabbitMQ", URL: redact(u), Setting: "OUTBOXCHAOS_AMQP_URL or --amqp-url", Reason: RabbitMQReason(err), Err: err}
}

// RabbitMQReason classifies an AMQP dial error: a refused login (the
// client's ErrCredentials, or ACCESS_REFUSED 403) is AuthFailed, another
// connection error the broker sent (no such vhost) is Refused, and no
// answer is Unreachable.
func RabbitMQReason(err error) string {
	var ae *amqp.Error
	switch {
	case errors.Is(err, amqp.ErrCredentials), errors.Is(err, amqp.ErrSASL):
		return AuthFailed
	case errors.As(err, &ae) && ae.Code == amqp.AccessRefused:
		return AuthFailed
	case errors.Is(err, amqp.ErrVhost), errors.As(err, &ae) && ae.Server:
		return Refused
	default:
		return Unreachable
	}
}

// Services checks Postgres and RabbitMQ, both, and joins what failed.
func Services(ctx context.Context, pgURL, amqpURL string) error {
	return errors.Join(Postgres(ctx, pgURL), RabbitMQ(ctx, amqpURL))
}

// redact hides a URL's password.
func redact(s string) string {
	u, err := url.Parse(s)
	if err != nil {
		return "(unparsable URL)"
	}
	return u.Redacted()
}
