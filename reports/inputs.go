package reports

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
)

// PageInputs are the files a committed page is generated from (globs
// from the repository's root; a _test.go file never counts) and the make
// target that regenerates it.
type PageInputs struct {
	Target string
	Globs  []string
}

// Inputs names each committed page's inputs: its generator's files and
// what it renders (the catalogue, the day file, the peer registry, the
// exploration ledger). A page records their hash when it is written
// (InputsLine); a test fails when HEAD's inputs hash otherwise, naming
// the target to run.
var Inputs = map[string]PageInputs{
	"RELIABILITY.md": {Target: "make report", Globs: []string{"reports/reliability.go", "reports/glance.go", "reports/ledger.go",
		"reports/sequence.go", "reports/reconcile.go", "reports/crashpoints.go", "reports/coverage.go", "reports/branches.go", "reports/cost.go",
		"reports/inputs.go", "scenarios/catalogue/*.go", "checker/invariant.go", "system/canary/canary.go", "reports/explored.jsonl"}},
	"SIMULATION.md":  {Target: "make simulate", Globs: []string{"sim/*.go", "reports/inputs.go"}},
	"CAPACITY.md":    {Target: "make capacity", Globs: []string{"sim/*.go", "reports/inputs.go"}},
	"PERFORMANCE.md": {Target: "make bench", Globs: []string{"bench/*.go", "bench/cmd/outboxbench/*.go", "reports/inputs.go"}},
	"PEERS.md": {Target: "make peers", Globs: []string{"reports/peers.go", "reports/peer_findings.go", "reports/peer_layers.go",
		"peers/registry.go", "scenarios/catalogue/peers.go", "scenarios/catalogue/peer_*.go", "reports/inputs.go"}},
}

// InputsHash hashes page's inputs under root: each file's path and
// contents, in path order.
func InputsHash(root, page string) (string, error) {
	in, ok := Inputs[page]
	if !ok {
		return "", fmt.Errorf("%s: no inputs named for this page", page)
	}
	var files []string
	for _, g := range in.Globs {
		m, err := filepath.Glob(filepath.Join(root, g))
		if err != nil {
			return "", fmt.Errorf("inputs of %s: %w", page, err)
		}
		if len(m) == 0 {
			return "", fmt.Errorf("inputs of %s: nothing matches %s under %s", page, g, root)
		}
		for _, f := range m {
			if !strings.HasSuffix(f, "_test.go") {
				files = append(files, f)
			}
		}
	}
	slices.Sort(files)
	files = slices.Compact(files)
	h := sha256.New()
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return "", fmt.Errorf("inputs of %s: %w", page, err)
		}
		rel, _ := filepath.Rel(root, f)
		fmt.Fprintf(h, "%s\x00%d\x00", filepath.ToSlash(rel), len(b))
		h.Write(b)
	}
	return hex.EncodeToString(h.Sum(nil))[:16], nil
}

// InputsLine is the comment line that records page's inputs as the
// working directory holds them ("" when they cannot be read there: a
// page written outside the repository).
func InputsLine(page string) string {
	sum, err := InputsHash(".", page)
	if err != nil {
		return ""
	}
	return fmt.Sprintf("\n<!-- inputs %s: generated from these inputs (reports.Inputs); regenerate with %s when they change -->\n", sum, Inputs[page].Target)
}

var inputsLine = regexp.MustCompile(`(?m)^<!-- inputs ([0-9a-f]{16}):`)

// RecordedInputs returns the inputs hash a page recorded, if any.
func RecordedInputs(content []byte) (string, bool) {
	m := inputsLine.FindSubmatch(content)
	if m == nil {
		return "", false
	}
	return string(m[1]), true
}

// WritePage writes a page to path, creating its folder, and records its
// inputs when it is one of the committed pages (by its file name).
func WritePage(path string, content []byte) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("create %s: %w", filepath.Dir(path), err)
	}
	content = append(content, InputsLine(filepath.Base(path))...)
	if err := os.WriteFile(path, content, 0o644); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}
