package reports

import (
	"fmt"
	"os/exec"
	"regexp"
	"runtime/debug"
	"strings"
	"time"
)

// Stamp is the commit a report was generated at and when. Every committed
// report (RELIABILITY, PEERS, PERFORMANCE, SIMULATION, CAPACITY) writes it
// with Rows, so a reader knows how old its figures are, and
// CheckStamp finds it again.
type Stamp struct {
	Commit string
	Date   time.Time
}

// NewStamp is now, at the commit this binary was built from (Commit).
func NewStamp() Stamp { return Stamp{Commit: Commit(), Date: time.Now()} }

// Rows renders the stamp as two rows of a two-column markdown table:
// "| commit | `abc1234` |" and "| date | 2026-12-02 01:50 UTC |".
func (s Stamp) Rows() string {
	return fmt.Sprintf("| commit | `%s` |\n| date | %s |\n", s.Commit, s.Date.UTC().Format("2006-01-02 15:04 UTC"))
}

// Table renders the stamp as a table of its own, for a page with no
// table of its environment to put Rows in.
func (s Stamp) Table() string { return "| generated at | |\n|---|---|\n" + s.Rows() + "\n" }

var (
	stampCommit = regexp.MustCompile("(?m)^\\| commit \\| `[0-9a-f]{7}")
	stampDate   = regexp.MustCompile(`(?m)^\| date \| 20\d\d-\d\d-\d\d \d\d:\d\d UTC \|`)
)

// CheckStamp says what of the stamp Rows writes a page lacks, if anything.
func CheckStamp(page []byte) error {
	var missing []string
	if !stampCommit.Match(page) {
		missing = append(missing, "commit")
	}
	if !stampDate.Match(page) {
		missing = append(missing, "date")
	}
	if len(missing) > 0 {
		return fmt.Errorf("it does not name the %s it was generated at", strings.Join(missing, " and "))
	}
	return nil
}

// Commit is the short commit this binary was built from (Go's build
// information, "+dirty" for a modified tree), else the working tree's, or
// "unknown".
func Commit() string {
	if bi, ok := debug.ReadBuildInfo(); ok {
		rev, dirty := "", false
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				rev = s.Value
			case "vcs.modified":
				dirty = s.Value == "true"
			}
		}
		if len(rev) >= 7 {
			if dirty {
				return rev[:7] + "+dirty"
			}
			return rev[:7]
		}
	}
	if b, err := exec.Command("git", "rev-parse", "--short=7", "HEAD").Output(); err == nil {
		return strings.TrimSpace(string(b))
	}
	return "unknown"
}
