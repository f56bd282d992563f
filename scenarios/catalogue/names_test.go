package catalogue

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestCatalogueNamesEventsByConstant: the catalogue's conditions and rules
// name events, attribute keys and publish outcomes by the history
// package's constants, as the pipeline logs them: a literal would keep
// waiting on a name the pipeline no longer logs.
func TestCatalogueNamesEventsByConstant(t *testing.T) {
	t.Parallel()
	literal := regexp.MustCompile(`(podEvent\(|eventOf\(|eventWith\(\S+, |EventCond\{Name: |Event: )"|Attrs: map\[string\]string\{"`)
	files, err := filepath.Glob("*.go")
	if err != nil || len(files) == 0 {
		t.Fatalf("list scenarios/: %v", err)
	}
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for i, line := range strings.Split(string(raw), "\n") {
			if literal.MatchString(line) {
				t.Errorf("%s:%d names an event or attribute by a literal: %s", f, i+1, strings.TrimSpace(line))
			}
		}
	}
}
