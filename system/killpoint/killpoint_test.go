package killpoint

import (
	"errors"
	"strings"
	"testing"
)

// TestArmRejectsUnknownAndBadHit: only compiled-in names arm, with a
// positive hit number.
func TestArmRejectsUnknownAndBadHit(t *testing.T) {
	for _, bad := range []string{"relay.nowhere", "relay.after-claim:0", "relay.after-claim:x"} {
		if err := Arm(bad); err == nil {
			t.Errorf("Arm(%q) accepted a bad spec", bad)
		}
	}
	if err := ArmFail("worker.nowhere"); err == nil || !strings.Contains(err.Error(), "unknown failpoint") {
		t.Errorf("ArmFail accepted an unknown failpoint: %v", err)
	}
}

// TestHitFiresOnTheNthHitOnly: the armed point dies on its Nth hit, other
// points never.
func TestHitFiresOnTheNthHitOnly(t *testing.T) {
	fired := 0
	old := die
	die = func() { fired++ }
	defer func() { die = old; armed.Store(false) }()
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
	defer func() { failMu.Lock(); delete(failNth, FailResultUpdate); failMu.Unlock() }()
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
