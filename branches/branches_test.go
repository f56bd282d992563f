package branches_test

import (
	"strings"
	"testing"

	"github.com/outboxchaos/outboxchaos/branches"
)

// A profile as `go test -coverprofile` wrote it for testdata/src/cv/a.go
// called with errX: the err != nil body ran, the errors.Is body and the
// ctx-done case did not.
const profile = `mode: set
example.com/m/cv/a.go:10.44,11.16 1 1
example.com/m/cv/a.go:11.16,13.3 1 1
example.com/m/cv/a.go:14.2,14.26 1 0
example.com/m/cv/a.go:14.26,16.3 1 0
example.com/m/cv/a.go:17.2,17.9 1 0
example.com/m/cv/a.go:18.20,19.11 1 0
example.com/m/cv/a.go:20.10,20.10 0 0
example.com/m/cv/a.go:22.2,22.10 1 0
`

func TestFindAndReach(t *testing.T) {
	t.Parallel()
	bs, err := branches.Find("testdata/src", "example.com/m", "cv")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, b := range bs {
		got = append(got, b.String())
	}
	want := []string{"a.go:11 F (err != nil)", "a.go:14 F (errors.Is/As)", "a.go:18 F (ctx done)"}
	if strings.Join(got, "; ") != strings.Join(want, "; ") {
		t.Fatalf("branches:\n got %q\nwant %q", got, want)
	}
	ps, err := branches.ReadProfile(strings.NewReader(profile))
	if err != nil {
		t.Fatal(err)
	}
	m := branches.Reach(bs, ps)
	if r, n := m.Totals(); r != 1 || n != 3 {
		t.Fatalf("reached %d of %d, want 1 of 3", r, n)
	}
	pkgs := m.ByPackage()
	if len(pkgs) != 1 || pkgs[0].Pkg != "example.com/m/cv" || len(pkgs[0].Missed) != 2 || pkgs[0].Missed[1].Kind != branches.KindDone {
		t.Fatalf("by package: %+v", pkgs)
	}
	// Each body reached on its own is seen as reached.
	all := strings.ReplaceAll(strings.ReplaceAll(profile, "14.26,16.3 1 0", "14.26,16.3 1 3"), "18.20,19.11 1 0", "18.20,19.11 1 1")
	ps, _ = branches.ReadProfile(strings.NewReader(all))
	if r, n := branches.Reach(bs, ps).Totals(); r != 3 || n != 3 {
		t.Fatalf("every body ran: reached %d of %d", r, n)
	}
	// A file the profile does not cover counts neither way.
	if r, n := branches.Reach(bs, nil).Totals(); r != 0 || n != 0 {
		t.Fatalf("no profile: reached %d of %d, want 0 of 0", r, n)
	}
}

// Every entry of unreachable.tsv names error branches that are in
// system/'s source today, one per entry unless its guard is *, with a
// known class and a reason: an entry the code outgrew fails here, so the
// list stays true as the code changes.
func TestReasonsMatchSource(t *testing.T) {
	t.Parallel()
	bs, err := branches.Find("..", "github.com/outboxchaos/outboxchaos", "system", "testenv")
	if err != nil {
		t.Fatal(err)
	}
	rs, err := branches.Reasons()
	if err != nil {
		t.Fatal(err)
	}
	if len(rs) == 0 {
		t.Fatal("no entries in unreachable.tsv")
	}
	explained, errs := branches.Explain(bs, rs)
	for _, err := range errs {
		t.Error(err)
	}
	for _, r := range explained {
		if len(r.Reason) < 10 {
			t.Errorf("%s line %d: reason %q says too little", branches.ReasonsFile, r.Line, r.Reason)
		}
	}
}

func TestExplain(t *testing.T) {
	t.Parallel()
	bs, err := branches.Find("testdata/src", "example.com/m", "cv")
	if err != nil {
		t.Fatal(err)
	}
	if g := bs[0].Guard; g != "err != nil" {
		t.Errorf("guard of the first branch %q", g)
	}
	if g := bs[1].Guard; g != "errors.Is(err, errX)" {
		t.Errorf("guard of the second branch %q", g)
	}
	if g := bs[2].Guard; g != "<-ctx.Done()" {
		t.Errorf("guard of the third branch %q", g)
	}
	rs, err := branches.ParseReasons("# comment\n\nexample.com/m/cv/a.go\tF\terrors.Is\tdefensive\tcannot fail here\n")
	if err != nil {
		t.Fatal(err)
	}
	ps, _ := branches.ReadProfile(strings.NewReader(profile))
	m := branches.Reach(bs, ps)
	if errs := m.Explain(rs); len(errs) != 0 {
		t.Fatal(errs)
	}
	p := m.ByPackage()[0]
	if p.Reached != 1 || len(p.Explained) != 1 || len(p.Open) != 1 || p.Open[0].Kind != branches.KindDone || p.ByClass(m)["defensive"] != 1 {
		t.Fatalf("by package: %+v", p)
	}
	// Stale, ambiguous, unknown class, no reason, named twice.
	for _, bad := range []string{
		"example.com/m/cv/a.go\tG\t*\tinput\tno such function",
		"example.com/m/cv/b.go\t*\t*\tinput\tno such file",
		"example.com/m/cv/a.go\tF\terr\tinput\ttwo branches test err",
		"example.com/m/cv/a.go\tF\tctx.Done\tmaybe\tunknown class",
		"example.com/m/cv/a.go\tF\tctx.Done\tinput\t",
		"example.com/m/cv/a.go\t*\t*\tinput\tall of them\nexample.com/m/cv/a.go\tF\tctx.Done\tinput\tone again",
	} {
		rs, err := branches.ParseReasons(bad)
		if err != nil {
			t.Fatal(err)
		}
		if _, errs := branches.Explain(bs, rs); len(errs) == 0 {
			t.Errorf("%q: no error", bad)
		}
	}
	if _, err := branches.ParseReasons("example.com/m/cv/a.go\tF\tinput\tthree fields and a half"); err == nil {
		t.Error("4 fields: no error")
	}
}
