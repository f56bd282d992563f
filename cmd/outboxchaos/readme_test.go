package main

import (
	"bufio"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"unicode"

	"github.com/outboxchaos/outboxchaos/scenarios/catalogue"
	"github.com/outboxchaos/outboxchaos/system/canary"
)

// The repository's root, seen from this package's directory.
const repoRoot = "../.."

// scenariosDoc is the page that holds the scenario and canary tables.
const scenariosDoc = "docs/scenarios.md"

func readRepoFile(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(repoRoot, filepath.FromSlash(name)))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// headingLevel is the level of a markdown heading line ("## X": 2), or 0.
func headingLevel(line string) int {
	n := len(line) - len(strings.TrimLeft(line, "#"))
	if n == 0 || !strings.HasPrefix(line[n:], " ") {
		return 0
	}
	return n
}

// section returns the part of page that starts with the line heading, up
// to the next heading of the same or a higher level, outside fenced code.
func section(t *testing.T, page, name, heading string) string {
	t.Helper()
	i := strings.Index(page, "\n"+heading+"\n")
	if i < 0 {
		t.Fatalf("%s has no section %q", name, heading)
	}
	level := headingLevel(heading)
	lines := strings.Split(page[i+1:], "\n")
	fenced := false
	for j, l := range lines[1:] {
		if strings.HasPrefix(l, "```") {
			fenced = !fenced
		}
		if k := headingLevel(l); !fenced && k > 0 && k <= level {
			return strings.Join(lines[:j+1], "\n")
		}
	}
	return strings.Join(lines, "\n")
}

// tableNames returns the backquoted names in the first cell of every table
// row of the section of page that starts with heading.
func tableNames(t *testing.T, page, name, heading string) map[string]bool {
	t.Helper()
	names := map[string]bool{}
	quoted := regexp.MustCompile("`([a-z0-9-]+)`")
	for _, line := range strings.Split(section(t, page, name, heading), "\n") {
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

// The scenario and canary tables of docs/scenarios.md name every
// registered scenario and canary, and nothing else: a new one without its
// row fails here.
func TestReadmeScenarioDocTablesMatchTheRegistries(t *testing.T) {
	t.Parallel()
	doc := readRepoFile(t, scenariosDoc)
	tables := tableNames(t, doc, scenariosDoc, "## Scenarios")
	for n := range tableNames(t, doc, scenariosDoc, "## Infrastructure faults (containers)") {
		tables[n] = true
	}
	registered := map[string]bool{}
	for _, s := range append(catalogue.Named(), catalogue.Infra()...) {
		registered[s.Name] = true
		if !tables[s.Name] {
			t.Errorf("scenario %s has no row in the tables of %s", s.Name, scenariosDoc)
		}
	}
	for n := range tables {
		if !registered[n] {
			t.Errorf("the scenario tables of %s name %s, which is no registered scenario", scenariosDoc, n)
		}
	}
	canaries := tableNames(t, doc, scenariosDoc, "## Canaries: proof the harness can fail")
	for _, n := range canary.Names {
		if !canaries[n] {
			t.Errorf("canary %s has no row in the canary table of %s", n, scenariosDoc)
		}
	}
	known := map[string]bool{}
	for _, n := range append(append([]string(nil), canary.Names...), canary.InfraNames...) {
		known[n] = true
	}
	for n := range canaries {
		if !known[n] {
			t.Errorf("the canary table of %s names %s, which is no canary", scenariosDoc, n)
		}
	}
	infra := section(t, doc, scenariosDoc, "## Infrastructure faults (containers)")
	for _, n := range canary.InfraNames {
		if !strings.Contains(infra, "`"+n+"`") {
			t.Errorf("infrastructure canary %s is not named in the infrastructure section of %s", n, scenariosDoc)
		}
	}
}

// ignoredTopDirs reads the top-level folders the root .gitignore ignores
// ("/bin/", "artifacts/"): they are made by builds and runs, not kept.
func ignoredTopDirs(t *testing.T) map[string]bool {
	t.Helper()
	ignored := map[string]bool{".git": true}
	f, err := os.Open(filepath.Join(repoRoot, ".gitignore"))
	if os.IsNotExist(err) {
		return ignored
	}
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		l := strings.TrimSpace(sc.Text())
		if l == "" || strings.HasPrefix(l, "#") || strings.HasPrefix(l, "!") || strings.ContainsAny(l, "*?[") {
			continue
		}
		l = strings.TrimSuffix(strings.TrimPrefix(l, "/"), "/")
		if l != "" && !strings.Contains(l, "/") {
			ignored[l] = true
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return ignored
}

// The README's folder table names every top-level folder of the
// repository, dot folders included (.ci, .github), and no folder that is
// not there; only .git and what .gitignore ignores (bin/, artifacts/) are
// left out.
func TestReadmeFolderTableListsEveryTopLevelFolder(t *testing.T) {
	t.Parallel()
	readme := readRepoFile(t, "README.md")
	listed := map[string]bool{}
	quoted := regexp.MustCompile("`([^`]+)`")
	for _, line := range strings.Split(section(t, readme, "README.md", "## What each folder holds"), "\n") {
		if !strings.HasPrefix(line, "| `") {
			continue
		}
		first := strings.SplitN(line[1:], "|", 2)[0]
		for _, m := range quoted.FindAllStringSubmatch(first, -1) {
			listed[strings.SplitN(strings.TrimSuffix(m[1], "/"), "/", 2)[0]] = true
		}
	}
	entries, err := os.ReadDir(repoRoot)
	if err != nil {
		t.Fatal(err)
	}
	ignored := ignoredTopDirs(t)
	present := map[string]bool{}
	for _, e := range entries {
		if !e.IsDir() || ignored[e.Name()] {
			continue
		}
		present[e.Name()] = true
		if !listed[e.Name()] {
			t.Errorf("top-level folder %s/ has no row in the README's folder table", e.Name())
		}
	}
	for n := range listed {
		if !present[n] {
			t.Errorf("the README's folder table names %s/, which is no top-level folder (or an ignored one)", n)
		}
	}
}

// anchor is the fragment GitHub gives a heading: lower case, letters,
// digits, spaces, hyphens and underscores kept, spaces turned to hyphens.
func anchor(heading string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(strings.TrimSpace(heading)) {
		switch {
		case r == ' ':
			b.WriteRune('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
			b.WriteRune(r)
		}
	}
	return b.String()
}

// anchors lists the fragments of a markdown page's headings (outside
// fenced code), with GitHub's -1, -2 … for repeated ones.
func anchors(page string) map[string]bool {
	out := map[string]bool{}
	seen := map[string]int{}
	fenced := false
	for _, l := range strings.Split(page, "\n") {
		if strings.HasPrefix(l, "```") {
			fenced = !fenced
			continue
		}
		if fenced || headingLevel(l) == 0 {
			continue
		}
		a := anchor(strings.ReplaceAll(strings.TrimLeft(l, "#"), "`", ""))
		if n := seen[a]; n > 0 {
			out[a+"-"+strconv.Itoa(n)] = true
		} else {
			out[a] = true
		}
		seen[a]++
	}
	return out
}

// Every relative link of the README and of docs/*.md leads to a file of
// the repository, and a link to a heading (page.md#heading, or #heading on
// the same page) to a heading that is there: a page moved or a section
// renamed fails here.
func TestReadmeAndDocLinksResolve(t *testing.T) {
	t.Parallel()
	pages := []string{"README.md"}
	docs, err := filepath.Glob(filepath.Join(repoRoot, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range docs {
		pages = append(pages, "docs/"+filepath.Base(d))
	}
	link := regexp.MustCompile(`\]\(([^)\s]+)\)`)
	for _, page := range pages {
		text := readRepoFile(t, page)
		var prose strings.Builder
		fenced := false
		for _, l := range strings.Split(text, "\n") {
			if strings.HasPrefix(l, "```") {
				fenced = !fenced
				continue
			}
			if !fenced {
				prose.WriteString(l + "\n")
			}
		}
		for _, m := range link.FindAllStringSubmatch(prose.String(), -1) {
			target := m[1]
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			file, frag, _ := strings.Cut(target, "#")
			resolved := page
			if file != "" {
				resolved = filepath.ToSlash(filepath.Clean(filepath.Join(filepath.Dir(page), file)))
				if strings.HasPrefix(resolved, "../") {
					t.Errorf("%s links %s, outside the repository", page, target)
					continue
				}
				if _, err := os.Stat(filepath.Join(repoRoot, filepath.FromSlash(resolved))); err != nil {
					t.Errorf("%s links %s: %v", page, target, err)
					continue
				}
			}
			if frag == "" || !strings.HasSuffix(resolved, ".md") {
				continue
			}
			if !anchors(readRepoFile(t, resolved))[frag] {
				t.Errorf("%s links %s: %s has no heading #%s", page, target, resolved, frag)
			}
		}
	}
}

// The README is for a newcomer: one page, at most 200 lines; the rest is
// in docs/.
func TestReadmeFitsOnePage(t *testing.T) {
	t.Parallel()
	if n := strings.Count(readRepoFile(t, "README.md"), "\n"); n > 200 {
		t.Errorf("README.md has %d lines, more than 200: move the detail to docs/", n)
	}
}
