package killpoint

import (
	"errors"
	"reflect"
	"strings"
	"testing"
)

// TestArmRejectsUnknownAndBadHit: only compiled-in names arm, with a
// positive hit number.
func TestArmRejectsUnknownAndBadHit(t *testing.T) {
	for _, bad := range []string{"relay.nowhere", "relay.after-claim:0", "relay.after-claim:x", "relay.after-claim,"} {
		if err := Arm(bad); err == nil {
			t.Errorf("Arm(%q) accepted a bad spec", bad)
		}
	}
	if err := ArmFail("worker.nowhere"); err == nil || !strings.Contains(err.Error(), "unknown failpoint") {
		t.Errorf("ArmFail accepted an unknown failpoint: %v", err)
	}
}

// TestParseSpec: kill-points and failpoints share one grammar.
func TestParseSpec(t *testing.T) {
	for _, tc := range []struct {
		spec string
		want map[string]int
	}{
		{"", map[string]int{}},
		{"  ", map[string]int{}},
		{RelayAfterClaim, map[string]int{RelayAfterClaim: 1}},
		{WorkerAfterClaim + ":3", map[string]int{WorkerAfterClaim: 3}},
		{RelayAfterClaim + ":2, " + WorkerAfterSend, map[string]int{RelayAfterClaim: 2, WorkerAfterSend: 1}},
	} {
		got, err := parseSpec("kill-point", tc.spec, Names)
		if err != nil || !reflect.DeepEqual(got, tc.want) {
			t.Errorf("parseSpec(%q) = %v, %v; want %v", tc.spec, got, err, tc.want)
		}
	}
	_, err := parseSpec("failpoint", "worker.nowhere:2", FailNames)
	if err == nil || !strings.Contains(err.Error(), `unknown failpoint "worker.nowhere"`) ||
		!strings.Contains(err.Error(), FailResultUpdate) {
		t.Errorf("unknown name: error %v, want it to name the point and list the valid ones", err)
	}
}

// TestArmFromEnv: the entry point arms both kinds from their variables; a
// bad spec names its variable and arms nothing.
func TestArmFromEnv(t *testing.T) {
	fired := 0
	old := die
	die = func() { fired++ }
	t.Cleanup(func() { die = old; Disarm(); DisarmFail() })

	t.Setenv(EnvVar, RelayAfterClaim)
	t.Setenv(FailEnvVar, FailResultUpdate+":2")
	if err := ArmFromEnv(); err != nil {
		t.Fatal(err)
	}
	Hit(RelayAfterClaim)
	if fired != 1 {
		t.Fatalf("kill-point armed from %s did not fire", EnvVar)
	}
	if Fail(FailResultUpdate) != nil || !errors.Is(Fail(FailResultUpdate), ErrInjected) {
		t.Fatalf("failpoint armed from %s did not fail its second hit", FailEnvVar)
	}

	Disarm()
	t.Setenv(EnvVar, WorkerAfterSend)
	t.Setenv(FailEnvVar, "worker.nowhere")
	err := ArmFromEnv()
	if err == nil || !strings.HasPrefix(err.Error(), FailEnvVar+": unknown failpoint") {
		t.Fatalf("ArmFromEnv with a bad %s: %v", FailEnvVar, err)
	}
	Hit(WorkerAfterSend)
	if fired != 1 {
		t.Fatal("a bad spec armed the kill-point of the other variable")
	}
}

// TestHitFiresOnTheNthHitOnly: the armed point dies on its Nth hit, other
// points never.
func TestHitFiresOnTheNthHitOnly(t *testing.T) {
	fired := 0
	old := die
	die = func() { fired++ }
	defer func() { die = old; Disarm() }()
	if err := Arm(WorkerAfterClaim + ":3"); err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= 5; i++ {
		Hit(RelayAfterClaim)
		Hit(WorkerAfterClaim)
		if want := map[bool]int{true: 1, false: 0}[i >= 3]; fired != want {
			t.Fatalf("after %d hits fired=%d, want %d", i, fired, want)
		}
	}
}

// TestFailReturnsInjectedErrorOnItsHit: a failpoint fails exactly its Nth
// hit, with an error wrapping ErrInjected.
func TestFailReturnsInjectedErrorOnItsHit(t *testing.T) {
	if err := ArmFail(FailResultUpdate + ":2"); err != nil {
		t.Fatal(err)
	}
	defer DisarmFail()
	if err := Fail(FailResultUpdate); err != nil {
		t.Fatalf("first hit failed: %v", err)
	}
	if err := Fail(FailResultUpdate); !errors.Is(err, ErrInjected) {
		t.Fatalf("second hit: want ErrInjected, got %v", err)
	}
	if err := Fail(FailResultUpdate); err != nil {
		t.Fatalf("third hit failed: %v", err)
	}
	if err := Fail(FailClaimResponse); err != nil {
		t.Fatalf("an unarmed failpoint failed: %v", err)
	}
}

// A pause-point freezes the process on its armed hit only, and a
// pause-point and a kill-point of the same name each keep their own count.
func TestPauseFreezesOnItsHitOnly(t *testing.T) {
	oldStop, oldDie := stop, die
	paused, killed := 0, 0
	stop, die = func() { paused++ }, func() { killed++ }
	defer func() { stop, die = oldStop, oldDie; Disarm() }()
	if err := ArmPause(WorkerBeforeClaim + ":2"); err != nil {
		t.Fatal(err)
	}
	if err := ArmPause("no.such-point"); err == nil {
		t.Fatal("an unknown pause-point was armed")
	}
	if err := ArmPause(WorkerBeforeClaim + ":2"); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 3; i++ {
		Hit(WorkerBeforeClaim)
	}
	if paused != 1 || killed != 0 {
		t.Fatalf("paused %d killed %d after 3 hits, want paused once on the 2nd", paused, killed)
	}
}
