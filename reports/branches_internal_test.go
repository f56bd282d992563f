package reports

import (
	"fmt"
	"strings"
	"testing"

	"github.com/outboxchaos/outboxchaos/branches"
)

// The section splits the branches into reached, not reached with a reason
// and open, the figures add up, each open branch is listed, and a reached
// branch the reasons file calls unreachable is called out.
func TestWriteBranchesReasons(t *testing.T) {
	pkg := "github.com/outboxchaos/outboxchaos/system/relay"
	mk := func(line int, fn, guard string) branches.Branch {
		return branches.Branch{Pkg: pkg, File: pkg + "/relay.go", Line: line, Func: fn, Kind: branches.KindErr, Guard: guard}
	}
	bs := []branches.Branch{mk(10, "A", "x()"), mk(20, "B", "json.Marshal(v)"), mk(30, "C", "tx.Commit(ctx)"), mk(40, "D", "url.Parse(s)")}
	m := &branches.Map{Branches: bs, Instrumented: map[string]bool{pkg + "/relay.go": true},
		Reached: map[string]bool{bs[0].ID(): true, bs[3].ID(): true}}
	rs, err := branches.ParseReasons("relay/relay.go\tB\tjson.Marshal\tdefensive\tcannot fail\nrelay/relay.go\tD\t*\tinput\tonly a bad URL\n")
	if err != nil {
		t.Fatal(err)
	}
	if errs := m.Explain(rs); len(errs) != 0 {
		t.Fatal(errs)
	}
	var sb strings.Builder
	writeBranches(func(f string, a ...any) { fmt.Fprintf(&sb, f, a...) }, m)
	out := sb.String()
	for _, want := range []string{
		"**2 of 4 reached (50 %); 1 not reached with a reason (defensive 1); 1 open.**",
		"| `system/relay` | 4 | 2 | 1 | 1 |",
		"| **all** | **4** | **2** | **1** | **1** |",
		"- `system/relay`: `relay.go:30` C",
		"`relay.go:40` D (line 2 of `branches/unreachable.tsv`)",
		"[`branches/unreachable.tsv`]",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("missing %q in\n%s", want, out)
		}
	}
}
