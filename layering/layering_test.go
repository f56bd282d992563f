package layering

import (
	"os/exec"
	"strings"
	"testing"
)

const module = "github.com/outboxchaos/outboxchaos"

// rule is what the packages matching pkg may import of the module (may)
// and may not depend on at all, directly or not (banned: import path
// prefixes, the module's or outside ones). A pkg ending in "/..." matches
// every package under it; the most specific rule applies.
type rule struct {
	pkg    string
	may    []string
	banned []string
}

// io are the packages a verdict must not depend on: a database, a broker,
// an HTTP client.
var io = []string{"github.com/jackc/pgx", "github.com/rabbitmq/amqp091-go", "net/http", "database/sql"}

// rules are the allowed edges, from the vocabulary up to the commands.
var rules = []rule{
	// The vocabulary and the leaves: they import nothing of the module.
	{pkg: "history"}, {pkg: "auditor"}, {pkg: "branches"}, {pkg: "fakevendor"}, {pkg: "infra"}, {pkg: "scenarios/infra"},
	{pkg: "alertsites", may: []string{"branches"}},
	// The pipeline under test knows nothing of the harness.
	{pkg: "system/...", may: []string{"system/...", "history"}},
	// The verdict is pure.
	{pkg: "checker", may: []string{"auditor", "history"}, banned: io},
	{pkg: "audit/month", may: []string{"auditor", "checker", "history"}},
	{pkg: "audit", may: []string{"auditor", "checker", "history", "system/..."}},
	{pkg: "audit/audittest", may: []string{"audit", "auditor", "checker", "history", "system/..."}},
	// What faults act on, the faults, the relays we did not write.
	{pkg: "rig", may: []string{"history", "system/..."}},
	{pkg: "faults", may: []string{"checker", "fakevendor", "history", "system/...", "rig"}},
	{pkg: "peers", may: []string{"system/..."}},
	{pkg: "peers/...", may: []string{"peers", "peers/...", "history", "system/..."}, banned: []string{module + "/bench", "gonum.org/"}},
	// The harness, its pages, the simulator, the benchmark.
	// The scenario language is data and its validation: it runs nothing.
	{pkg: "scenarios/scenario", may: []string{"auditor", "checker", "faults", "system/...", "rig"}},
	// The run: the engine, the verbs and conditions carried out, a run's
	// world; behind the internal boundary, named outside through
	// scenarios.
	{pkg: "scenarios/internal/run", may: []string{"auditor", "checker", "fakevendor", "faults", "history", "peers", "scenarios/scenario", "system/...", "rig"}},
	// The named scenarios are data written in the language: they run
	// nothing.
	{pkg: "scenarios/catalogue", may: []string{"checker", "fakevendor", "faults", "history", "peers", "rig", "scenarios/scenario", "system/..."}},
	// What a user of the harness needs of a run.
	{pkg: "scenarios", may: []string{"auditor", "checker", "peers", "scenarios/catalogue", "scenarios/internal/run", "scenarios/scenario"}},
	{pkg: "scenarios/explore", may: []string{"checker", "fakevendor", "faults", "history", "peers", "scenarios", "scenarios/catalogue", "scenarios/internal/run", "scenarios/scenario", "system/...", "rig"}},
	{pkg: "reports", may: []string{"branches", "checker", "faults", "history", "peers", "scenarios", "scenarios/explore", "scenarios/scenario", "rig"}},
	{pkg: "sim", may: []string{"auditor", "checker", "fakevendor", "faults", "history", "reports", "scenarios", "system/...", "rig"}},
	{pkg: "bench", may: []string{"bench/baseline", "fakevendor", "history", "reports", "system/...", "rig"}},
	{pkg: "bench/baseline", may: []string{"system/..."}},
	{pkg: "bench/peerbench", may: []string{"bench", "peers", "system/..."}},
	// The commands may import any package but a command.
	{pkg: "bench/cmd/...", may: []string{"..."}, banned: []string{module + "/cmd/", module + "/bench/cmd/"}},
	{pkg: "cmd/...", may: []string{"..."}, banned: []string{module + "/cmd/", module + "/bench/cmd/"}},
	{pkg: "layering"},
}

// matches reports whether pattern (a package, "x/..." or "...") names p.
func matches(pattern, p string) bool {
	switch {
	case pattern == "...":
		return true
	case strings.HasSuffix(pattern, "/..."):
		return strings.HasPrefix(p, strings.TrimSuffix(pattern, "..."))
	}
	return p == pattern
}

// ruleFor is the most specific rule naming p: an exact one, else the
// longest "/..." one.
func ruleFor(p string) (rule, bool) {
	var best rule
	found := false
	for _, r := range rules {
		if !matches(r.pkg, p) {
			continue
		}
		if r.pkg == p {
			return r, true
		}
		if !found || len(r.pkg) > len(best.pkg) {
			best, found = r, true
		}
	}
	return best, found
}

// TestLayering: every package of the module has a rule, imports only what
// its rule allows, and depends on nothing its rule bans; so no edge runs
// upward.
func TestLayering(t *testing.T) {
	t.Parallel()
	out, err := exec.Command("go", "list", "-test=false", "-f", "{{.ImportPath}}|{{join .Imports \" \"}}|{{join .Deps \" \"}}", module+"/...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	seen := 0
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		parts := strings.SplitN(line, "|", 3)
		pkg := strings.TrimPrefix(strings.TrimPrefix(parts[0], module), "/")
		if pkg == "" {
			continue
		}
		seen++
		r, ok := ruleFor(pkg)
		if !ok {
			t.Errorf("%s has no rule: add a row to the table", pkg)
			continue
		}
		for _, imp := range strings.Fields(parts[1]) {
			if !strings.HasPrefix(imp, module+"/") {
				continue
			}
			to := strings.TrimPrefix(imp, module+"/")
			allowed := false
			for _, m := range r.may {
				allowed = allowed || matches(m, to)
			}
			if !allowed {
				t.Errorf("%s imports %s, which its rule (%s) does not allow", pkg, to, r.pkg)
			}
		}
		for _, dep := range strings.Fields(parts[2]) { // every dependency, direct or not
			for _, b := range r.banned {
				if strings.HasPrefix(dep, b) {
					t.Errorf("%s depends on %s, which its rule (%s) bans", pkg, dep, r.pkg)
				}
			}
		}
	}
	if seen < 40 {
		t.Fatalf("go list named %d packages of the module: the listing is wrong", seen)
	}
}

// TestRulesCatchAnUpwardEdge: the table refuses the edges it exists to
// refuse.
func TestRulesCatchAnUpwardEdge(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ from, to string }{
		{"system/relay", "checker"}, {"system/worker", "faults"}, {"checker", "system/inbox"},
		{"peers/seam", "bench"}, {"scenarios", "reports"}, {"scenarios/scenario", "scenarios"}, {"scenarios", "scenarios/explore"}, {"scenarios/internal/run", "scenarios"}, {"scenarios/catalogue", "scenarios"}, {"scenarios/catalogue", "scenarios/internal/run"}, {"history", "system/config"}, {"rig", "faults"},
	} {
		r, ok := ruleFor(c.from)
		if !ok {
			t.Fatalf("%s has no rule", c.from)
		}
		for _, m := range r.may {
			if matches(m, c.to) {
				t.Errorf("%s may import %s (rule %s)", c.from, c.to, r.pkg)
			}
		}
	}
}
