package clock

import (
	"fmt"
	"os"
	"strings"
	"sync"
	"time"
)

// FilePrefix starts a clock setting that names a file holding the setting
// ("file:/tmp/run/clock"). Every process reading it follows the file when
// another rewrites it, so a simulator can move the time of a whole
// pipeline at once: skip an idle stretch of the day, or change the rate.
const FilePrefix = "file:"

// fileRecheck is how long a File clock trusts its last read of the file.
const fileRecheck = 2 * time.Millisecond

// File is a clock whose setting lives in a file (see WriteSetting). It
// re-reads the file at most every few milliseconds (a read of a few dozen
// bytes); a file that vanishes or stops parsing keeps the last good
// setting.
type File struct {
	path string

	mu      sync.Mutex
	cur     *Virtual
	raw     string
	checked time.Time
}

// OpenFile returns the clock stored at path; the file must exist and hold
// a virtual clock setting.
func OpenFile(path string) (*File, error) {
	f := &File{path: path}
	if err := f.reload(true); err != nil {
		return nil, err
	}
	return f, nil
}

// Now returns the time the file's setting gives.
func (f *File) Now() time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	if time.Since(f.checked) >= fileRecheck {
		_ = f.reloadLocked(false)
	}
	return f.cur.Now()
}

func (f *File) reload(force bool) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.reloadLocked(force)
}

func (f *File) reloadLocked(force bool) error {
	f.checked = time.Now()
	b, err := os.ReadFile(f.path)
	if err != nil {
		return fmt.Errorf("clock file: %w", err)
	}
	raw := strings.TrimSpace(string(b))
	if !force && raw == f.raw {
		return nil
	}
	c, err := Parse(raw)
	if err != nil {
		return fmt.Errorf("clock file %s: %w", f.path, err)
	}
	v, ok := c.(*Virtual)
	if !ok {
		return fmt.Errorf("clock file %s: holds %q, not a virtual clock setting", f.path, b)
	}
	f.cur, f.raw = v, raw
	return nil
}

// WriteSetting stores v's setting at path atomically (write, then rename),
// so a File clock never reads half a setting.
func WriteSetting(path string, v *Virtual) error {
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(v.Setting()+"\n"), 0o644); err != nil {
		return fmt.Errorf("write clock file: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("write clock file: %w", err)
	}
	return nil
}
