package crashpoint

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	amqp "github.com/rabbitmq/amqp091-go"
)

// fakeDie counts deaths instead of dying, for one test.
func fakeDie(t *testing.T) *int {
	t.Helper()
	n := 0
	old := die
	die = func() { n++ }
	t.Cleanup(func() { die = old; Disarm() })
	return &n
}

// TestParsePoint: the spec grammar, and what it rejects.
func TestParsePoint(t *testing.T) {
	p, err := ParsePoint("sql:update-1a2b3c:after:2")
	if err != nil || p != (Point{Step: "sql:update-1a2b3c", Side: After, Hit: 2}) || p.String() != "sql:update-1a2b3c:after:2" {
		t.Fatalf("ParsePoint = %+v, %v", p, err)
	}
	for _, bad := range []string{"", "sql:x:after", "disk:x:after:1", "sql::after:1", "sql:x:during:1", "sql:x:after:0", "sql:x:after:y"} {
		if _, err := ParsePoint(bad); err == nil {
			t.Errorf("ParsePoint(%q) accepted a bad point", bad)
		}
	}
}

// TestSQLStepIsStable: a statement's name depends on its text only (not
// its whitespace), transaction control has plain names, pings none.
func TestSQLStepIsStable(t *testing.T) {
	a, _ := SQLStep("UPDATE t SET x = 1\n\t WHERE id = $1")
	b, _ := SQLStep("update t set x = 1 where id = $1")
	c, _ := SQLStep("UPDATE t SET x = 1 WHERE id = $1")
	if !strings.HasPrefix(a, "sql:update-") || len(a) != len("sql:update-")+6 || a != c {
		t.Fatalf("names %q %q: want sql:update-<6 hex>, the same for the same text", a, c)
	}
	if a == b {
		t.Fatalf("two different statements share the name %q", a)
	}
	for sql, want := range map[string]string{"commit": "sql:commit", "begin isolation level serializable": "sql:begin", "ROLLBACK TO SAVEPOINT s": "sql:rollback"} {
		if got, ok := SQLStep(sql); !ok || got != want {
			t.Errorf("SQLStep(%q) = %q, want %q", sql, got, want)
		}
	}
	if _, ok := SQLStep("-- ping"); ok {
		t.Error("a ping is a step")
	}
}

// TestReachDiesOnTheArmedHitOnly: the armed side of the armed step dies
// on its Nth hit; other steps and sides never.
func TestReachDiesOnTheArmedHitOnly(t *testing.T) {
	died := fakeDie(t)
	Arm(&Point{Step: "amqp:ack", Side: After, Hit: 2})
	for i := 1; i <= 3; i++ {
		Reach("amqp:ack", Before)
		Reach("amqp:nack", After)
		Reach("amqp:ack", After)
		if want := map[bool]int{true: 1, false: 0}[i >= 2]; *died != want {
			t.Fatalf("after %d hits died %d times, want %d", i, *died, want)
		}
	}
}

// TestQuietHoldsPointsOff: nothing fires or counts while Quiet holds.
func TestQuietHoldsPointsOff(t *testing.T) {
	died := fakeDie(t)
	Arm(&Point{Step: "sql:commit", Side: After, Hit: 1})
	resume := Quiet()
	Reach("sql:commit", After)
	resume()
	if *died != 0 {
		t.Fatal("a crash point fired while quiet")
	}
	Reach("sql:commit", After)
	if *died != 1 {
		t.Fatal("the first hit after Quiet ended did not fire")
	}
}

// TestArmFromEnvTraces: discovery appends the first TraceBound hits of
// each point to the trace file; a bad point is an error naming EnvVar.
func TestArmFromEnvTraces(t *testing.T) {
	fakeDie(t)
	path := filepath.Join(t.TempDir(), "x.trace")
	t.Setenv(EnvVar, "")
	t.Setenv(TraceEnvVar, path)
	if err := ArmFromEnv(); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < TraceBound+3; i++ {
		Reach("http:alert", Before)
	}
	Reach("http:alert", After)
	Disarm()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(lines) != TraceBound+1 || lines[0] != "http:alert:before 1" || lines[len(lines)-1] != "http:alert:after 1" {
		t.Fatalf("trace:\n%s", b)
	}
	t.Setenv(EnvVar, "sql:x:sideways:1")
	if err := ArmFromEnv(); err == nil || !strings.HasPrefix(err.Error(), EnvVar) {
		t.Fatalf("bad %s: %v", EnvVar, err)
	}
}

type countAcker struct{ acks, nacks, rejects int }

func (c *countAcker) Ack(uint64, bool) error        { c.acks++; return nil }
func (c *countAcker) Nack(uint64, bool, bool) error { c.nacks++; return errors.New("nack failed") }
func (c *countAcker) Reject(uint64, bool) error     { c.rejects++; return nil }

// TestAckerAndTransport: settlements and HTTP calls pass through (errors
// too) and are crash points on both sides; unarmed, Acker wraps nothing.
func TestAckerAndTransport(t *testing.T) {
	died := fakeDie(t)
	inner := &countAcker{}
	if Acker(inner) != amqp.Acknowledger(inner) {
		t.Fatal("unarmed Acker wrapped the acknowledger")
	}
	Arm(&Point{Step: "amqp:nack", Side: After, Hit: 1})
	a := Acker(inner)
	if err := a.Ack(1, false); err != nil || *died != 0 {
		t.Fatalf("ack: %v, died %d", err, *died)
	}
	if err := a.Nack(1, false, true); err == nil || *died != 1 {
		t.Fatalf("nack: %v (want its error), died %d (want 1)", err, *died)
	}
	_ = a.Reject(1, false)
	if inner.acks != 1 || inner.nacks != 1 || inner.rejects != 1 {
		t.Fatalf("settlements passed on: %+v", inner)
	}

	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(204) }))
	defer srv.Close()
	Arm(&Point{Step: "http:vendor-message", Side: Before, Hit: 2})
	c := &http.Client{Transport: Transport("vendor", http.DefaultTransport)}
	for i := 0; i < 2; i++ {
		resp, err := c.Post(srv.URL+"/v3/message", "application/json", nil)
		if err != nil || resp.StatusCode != 204 {
			t.Fatalf("call through the transport: %v", err)
		}
		resp.Body.Close()
	}
	if *died != 2 {
		t.Fatalf("died %d times, want 2 (the second call's before side)", *died)
	}
	if HTTPStep("alert", "/") != "http:alert" || HTTPStep("vendor", "/v1/token") != "http:vendor-token" {
		t.Fatal("HTTP step names")
	}
}
