package testenv

import (
	"errors"
	"strings"
	"testing"
)

func TestResolveUsesConfiguredServicesWhenTheyAnswer(t *testing.T) {
	called := false
	e, err := resolve(nil, func() (string, string, error) {
		called = true
		return "postgres://c", "amqp://c", nil
	})
	if err != nil {
		t.Fatalf("resolve: %v", err)
	}
	if e != nil {
		t.Fatalf("endpoints = %+v, want nil (configured services)", e)
	}
	if called {
		t.Fatal("containers started although the configured services answer")
	}
}

func TestResolveFallsBackToContainers(t *testing.T) {
	e, err := resolve(errors.New("connection refused"), func() (string, string, error) {
		return "postgres://postgres:postgres@localhost:32768/test?sslmode=disable", "amqp://guest:guest@localhost:32769", nil
	})
	if err != nil {
		t.Fatalf("resolve: %v", err)
	}
	want := endpoints{
		pg:   "postgres://postgres:postgres@localhost:32768/test?sslmode=disable",
		amqp: "amqp://guest:guest@localhost:32769",
	}
	if e == nil || *e != want {
		t.Fatalf("endpoints = %+v, want %+v", e, want)
	}
}

func TestResolveFailsWithOneClearMessage(t *testing.T) {
	localErr := errors.New("Postgres at postgres://127.0.0.1:5432: connection refused")
	startErr := errors.New("built without the containers tag")
	e, err := resolve(localErr, func() (string, string, error) { return "", "", startErr })
	if e != nil {
		t.Fatalf("endpoints = %+v, want nil", e)
	}
	if err == nil {
		t.Fatal("resolve succeeded although nothing is reachable")
	}
	if !errors.Is(err, localErr) || !errors.Is(err, startErr) {
		t.Errorf("error does not wrap both causes: %v", err)
	}
	msg := err.Error()
	for _, want := range []string{
		"connection refused",               // why the configured services failed
		"built without the containers tag", // why containers failed
		"OUTBOXCHAOS_TEST_PG_URL",
		"OUTBOXCHAOS_TEST_AMQP_URL",
		"bash .ci/run",
		"-tags containers",
	} {
		if !strings.Contains(msg, want) {
			t.Errorf("message lacks %q:\n%s", want, msg)
		}
	}
}

func TestURLsFollowStartedContainers(t *testing.T) {
	t.Setenv("OUTBOXCHAOS_TEST_PG_URL", "postgres://configured/test")
	t.Setenv("OUTBOXCHAOS_TEST_AMQP_URL", "amqp://configured/")
	// In the containers build this binary's Check may have started
	// containers already: start from none, and put them back after.
	prev := started.Swap(nil)
	t.Cleanup(func() { started.Store(prev) })
	if got := PGURL(); got != "postgres://configured/test" {
		t.Fatalf("PGURL before containers = %q", got)
	}
	started.Store(&endpoints{pg: "postgres://container/test", amqp: "amqp://container/"})
	if got := PGURL(); got != "postgres://container/test" {
		t.Errorf("PGURL = %q, want the container's", got)
	}
	if got := AMQPURL(); got != "amqp://container/" {
		t.Errorf("AMQPURL = %q, want the container's", got)
	}
}
