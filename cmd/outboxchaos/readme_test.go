package main

import (
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/outboxchaos/outboxchaos/scenarios"
	"github.com/outboxchaos/outboxchaos/system/canary"
)

// tableNames returns the backquoted names in the first cell of every table
// row of the README section that starts with heading, up to the next "## ".
func tableNames(t *testing.T, readme, heading string) map[string]bool {
	t.Helper()
	i := strings.Index(readme, "\n"+heading+"\n")
	if i < 0 {
		t.Fatalf("README has no section %q", heading)
	}
	sec := readme[i+1:]
	if j := strings.Index(sec[len(heading):], "\n## "); j >= 0 {
		sec = sec[:len(heading)+j]
	}
	names := map[string]bool{}
	quoted := regexp.MustCompile("`([a-z0-9-]+)`")
	for _, line := range strings.Split(sec, "\n") {
		if !strings.HasPrefix(line, "| `") {
			continue
		}
		first := strings.SplitN(line[1:], "|", 2)[0]
		for _, m := range quoted.FindAllStringSubmatch(first, -1) {
			names[m[1]] = true
		}
	}
	return names
}

// The README's scenario and canary tables name every registered scenario
// and canary, and nothing else: a new one without its row fails here.
func TestReadmeTablesMatchTheRegistries(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	readme := string(b)
	tables := tableNames(t, readme, "## Scenarios")
	for n := range tableNames(t, readme, "## Infrastructure faults (containers)") {
		tables[n] = true
	}
	registered := map[string]bool{}
	for _, s := range append(scenarios.Catalogue(), scenarios.InfraCatalogue()...) {
		registered[s.Name] = true
		if !tables[s.Name] {
			t.Errorf("scenario %s has no row in the README's tables", s.Name)
		}
	}
	for n := range tables {
		if !registered[n] {
			t.Errorf("the README's scenario tables name %s, which is no registered scenario", n)
		}
	}
	canaries := tableNames(t, readme, "## Proof the harness can fail: canaries")
	for _, n := range canary.Names {
		if !canaries[n] {
			t.Errorf("canary %s has no row in the README's canary table", n)
		}
	}
	known := map[string]bool{}
	for _, n := range append(append([]string(nil), canary.Names...), canary.InfraNames...) {
		known[n] = true
	}
	for n := range canaries {
		if !known[n] {
			t.Errorf("the README's canary table names %s, which is no canary", n)
		}
	}
	for _, n := range canary.InfraNames {
		if !strings.Contains(readme, "`"+n+"`") {
			t.Errorf("infrastructure canary %s is not in the README", n)
		}
	}
}
