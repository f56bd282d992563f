package branches_test

import (
	"maps"
	"slices"
	"testing"

	"github.com/outboxchaos/outboxchaos/branches"
)

// Keys name branches by file under system/, function and guard, a rank
// telling apart a function's branches with the same guard, and no line:
// the same branch further down the file keeps its key.
func TestKeys(t *testing.T) {
	t.Parallel()
	const pkg = "github.com/outboxchaos/outboxchaos/system/relay"
	mk := func(line int, fn, guard string) branches.Branch {
		return branches.Branch{Pkg: pkg, File: pkg + "/relay.go", Line: line, Func: fn, Kind: branches.KindErr, Guard: guard}
	}
	bs := []branches.Branch{mk(30, "A", "err != nil"), mk(10, "A", "err != nil"), mk(20, "B", "err := tx.Commit(ctx); err != nil")}
	keys := branches.Keys(bs)
	want := map[string]string{
		bs[1].ID(): "relay/relay.go:A:err != nil",
		bs[0].ID(): "relay/relay.go:A#2:err != nil",
		bs[2].ID(): "relay/relay.go:B:err := tx.Commit(ctx); err != nil",
	}
	if !maps.Equal(keys, want) {
		t.Fatalf("keys %q, want %q", keys, want)
	}
	moved := []branches.Branch{mk(44, "B", "err := tx.Commit(ctx); err != nil")}
	if k := branches.Keys(moved)[moved[0].ID()]; k != want[bs[2].ID()] {
		t.Errorf("moved branch: key %q", k)
	}

	m := &branches.Map{Branches: bs, Instrumented: map[string]bool{pkg + "/relay.go": true}, Reached: map[string]bool{bs[1].ID(): true}}
	if got := m.ReachedKeys(); !slices.Equal(got, []string{"relay/relay.go:A:err != nil"}) {
		t.Errorf("reached keys %q", got)
	}
	// Earlier runs reached B and a branch since gone; with A#1 reached
	// here, only A#2 is open.
	gone := m.AddEarlier([]string{"relay/relay.go:B:err := tx.Commit(ctx); err != nil", "relay/relay.go:C:err != nil"})
	if !slices.Equal(gone, []string{"relay/relay.go:C:err != nil"}) {
		t.Errorf("gone %q", gone)
	}
	p := m.ByPackage()[0]
	if p.Total != 3 || p.Reached != 1 || p.Ever != 2 || len(p.Missed) != 2 || len(p.Open) != 1 || p.Open[0].Line != 30 {
		t.Errorf("by package: %+v", p)
	}
}
