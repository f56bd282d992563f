//go:build containers

package testenv

import (
	"fmt"
	"net/url"
	"os"
	"testing"
)

// TestMain runs this package's tests on containers (even where the local
// services answer) and removes them afterwards: the containers path as CI
// runs it.
func TestMain(m *testing.M) {
	_ = os.Setenv(EnvForceContainers, "1")
	code := m.Run()
	if err := StopContainers(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		code = 1
	}
	os.Exit(code)
}

// TestContainersServeOnPrivatePorts: Check started containers on
// 127.0.0.1, on ports other than the shared services', and a test's own
// schema and queues work on them.
func TestContainersServeOnPrivatePorts(t *testing.T) {
	Require(t)
	if started.Load() == nil {
		t.Fatal("Check did not start containers although OUTBOXCHAOS_TEST_CONTAINERS=1")
	}
	for _, raw := range []string{PGURL(), AMQPURL()} {
		u, err := url.Parse(raw)
		if err != nil {
			t.Fatal(err)
		}
		if u.Hostname() != "127.0.0.1" || u.Port() == "5432" || u.Port() == "5672" {
			t.Errorf("container service at %s: want 127.0.0.1 on a private port", u.Host)
		}
	}
	db := NewMigratedSchema(t)
	var n int
	if err := db.Pool.QueryRow(t.Context(), "SELECT count(*) FROM notification_outbox").Scan(&n); err != nil {
		t.Fatalf("query the migrated schema on the container: %v", err)
	}
	ch := AMQPChannel(t)
	q := NewPrefix(t) + ".probe"
	if _, err := ch.QueueDeclare(q, false, true, false, false, nil); err != nil {
		t.Fatalf("declare a queue on the container: %v", err)
	}
}
