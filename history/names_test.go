package history

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestLogsByConstant: no Go file of the pipeline (system/), of the
// commands (cmd/) or of the peer relays' adapters (peers/) names an event,
// or the key that names one, by a string literal: a reader comparing the
// constant would miss a renamed literal. The peers' upstream code (the
// libraries, the Node.js relay) is not ours and not Go of this tree.
func TestLogsByConstant(t *testing.T) {
	t.Parallel()
	literal := regexp.MustCompile(`"` + KeyEvent + `",|KeyEvent, "`)
	for _, dir := range []string{"system", "cmd", "peers"} {
		n := 0
		err := filepath.WalkDir(filepath.Join("..", dir), func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() && d.Name() == "node-relay" {
				return filepath.SkipDir
			}
			if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
				return nil
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
			t.Fatalf("read %s/: %d files, %v", dir, n, err)
		}
	}
}
