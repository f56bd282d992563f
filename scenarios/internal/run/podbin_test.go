package run

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// Our pods run the pod build beside the harness's binary when it is there
// and not older; else the harness's binary, which has every command.
func TestPipelineBin(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	bin := filepath.Join(dir, "outboxchaos")
	write := func(path string, at time.Time) {
		t.Helper()
		if err := os.WriteFile(path, []byte("x"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(path, at, at); err != nil {
			t.Fatal(err)
		}
	}
	now := time.Now()
	write(bin, now)
	if got := pipelineBin(bin); got != bin {
		t.Errorf("no pod build: %s", got)
	}
	write(bin+podBinSuffix, now.Add(-time.Hour))
	if got := pipelineBin(bin); got != bin {
		t.Errorf("an older pod build, left from an earlier build: %s", got)
	}
	write(bin+podBinSuffix, now)
	if got := pipelineBin(bin); got != bin+podBinSuffix {
		t.Errorf("the pod build of the same build: %s", got)
	}
	if got := pipelineBin(filepath.Join(dir, "none")); got != filepath.Join(dir, "none") {
		t.Errorf("no binary at all: %s", got)
	}
}
