package history

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestPipelineLogsByConstant: no file of the pipeline (system/) names an
// event, or the key that names one, by a string literal: a reader
// comparing the constant would miss a renamed literal.
func TestPipelineLogsByConstant(t *testing.T) {
	t.Parallel()
	literal := regexp.MustCompile(`"` + KeyEvent + `",|KeyEvent, "`)
	n := 0
	err := filepath.WalkDir(filepath.Join("..", "system"), func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return err
		}
		raw, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		n++
		for i, line := range strings.Split(string(raw), "\n") {
			if literal.MatchString(line) {
				t.Errorf("%s:%d logs an event by a literal: %s", path, i+1, strings.TrimSpace(line))
			}
		}
		return nil
	})
	if err != nil || n == 0 {
		t.Fatalf("read system/: %d files, %v", n, err)
	}
}
