package preflight_test

import (
	"context"
	"errors"
	"net/url"
	"strings"
	"testing"

	"github.com/outboxchaos/outboxchaos/system/preflight"
	"github.com/outboxchaos/outboxchaos/system/testenv"
)

// withUser is rawURL with its user (and password) replaced.
func withUser(t *testing.T, rawURL string, u *url.Userinfo) string {
	t.Helper()
	p, err := url.Parse(rawURL)
	if err != nil {
		t.Fatal(err)
	}
	p.User = u
	return p.String()
}

func reason(t *testing.T, err error) string {
	t.Helper()
	var pe *preflight.Error
	if !errors.As(err, &pe) {
		t.Fatalf("want a *preflight.Error, got %v", err)
	}
	return pe.Reason
}

func TestServicesAnswer(t *testing.T) {
	testenv.Require(t)
	if err := preflight.Services(context.Background(), testenv.PGURL(), testenv.AMQPURL()); err != nil {
		t.Fatal(err)
	}
}

// A closed port is unreachable; the message names the URL and the setting.
func TestClosedPortIsUnreachable(t *testing.T) {
	t.Parallel()
	err := preflight.Postgres(context.Background(), "postgres://postgres@127.0.0.1:1/test?sslmode=disable")
	if reason(t, err) != preflight.Unreachable || !strings.Contains(err.Error(), "OUTBOXCHAOS_PG_URL") || !strings.Contains(err.Error(), "127.0.0.1:1") {
		t.Fatalf("got %v", err)
	}
	err = preflight.RabbitMQ(context.Background(), "amqp://guest:guest@127.0.0.1:1/")
	if reason(t, err) != preflight.Unreachable || !strings.Contains(err.Error(), "OUTBOXCHAOS_AMQP_URL") {
		t.Fatalf("got %v", err)
	}
}

// A server that answers and refuses the login says "authentication
// failed", not "unreachable"; the password never shows.
func TestRefusedLoginIsAuthenticationFailed(t *testing.T) {
	testenv.Require(t)
	t.Parallel()
	bad := withUser(t, testenv.AMQPURL(), url.UserPassword("guest", "not-the-password"))
	err := preflight.RabbitMQ(context.Background(), bad)
	if reason(t, err) != preflight.AuthFailed || !strings.Contains(err.Error(), "authentication failed") || strings.Contains(err.Error(), "not-the-password") {
		t.Fatalf("RabbitMQ: got %v", err)
	}
	// The shared Postgres trusts local users: an unknown role is the
	// refusal it gives (SQLSTATE 28000).
	bad = withUser(t, testenv.PGURL(), url.UserPassword("outboxchaos_no_such_role", "secret-pw"))
	err = preflight.Postgres(context.Background(), bad)
	if reason(t, err) != preflight.AuthFailed || strings.Contains(err.Error(), "secret-pw") {
		t.Fatalf("Postgres: got %v", err)
	}
}

// A database that does not exist is refused, for its own reason.
func TestMissingDatabaseIsRefused(t *testing.T) {
	testenv.Require(t)
	t.Parallel()
	p, _ := url.Parse(testenv.PGURL())
	p.Path = "/outboxchaos_no_such_db"
	err := preflight.Postgres(context.Background(), p.String())
	if reason(t, err) != preflight.Refused || !strings.Contains(err.Error(), "does not exist") {
		t.Fatalf("got %v", err)
	}
}
