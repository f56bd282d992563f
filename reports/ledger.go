package reports

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"time"

	"github.com/outboxchaos/outboxchaos/branches"
	"github.com/outboxchaos/outboxchaos/scenarios"
)

// LedgerEntry is one finished exploration, appended to the exploration
// ledger (reports/explored.jsonl) by make explore, make crashpoints and
// make report, so the report can show what has been explored in all.
type LedgerEntry struct {
	At         time.Time `json:"at"`
	Commit     string    `json:"commit"`
	What       string    `json:"what"` // "schedules" or "crash-points"
	Count      int       `json:"count"`
	Violations int       `json:"violations"`
	Seed       int64     `json:"seed"`
	Shard      string    `json:"shard,omitempty"`
	// Coverage is what the judged schedules' fired faults reached, fault
	// family × pipeline phase, single and pairwise (random schedules only).
	Coverage *scenarios.Coverage `json:"coverage,omitempty"`
	// Branches is how many error branches of system/ the exploration's
	// pods reached (run with --cover-dir), of how many.
	Branches *BranchCount `json:"branches,omitempty"`
}

// BranchCount is error branches reached of a total (package branches).
type BranchCount struct {
	Reached int `json:"reached"`
	Total   int `json:"total"`
}

// CountBranches counts what m reached (nil: not measured).
func CountBranches(m *branches.Map) *BranchCount {
	if m == nil {
		return nil
	}
	r, n := m.Totals()
	return &BranchCount{Reached: r, Total: n}
}

// Ledger kinds.
const (
	LedgerSchedules   = "schedules"
	LedgerCrashPoints = "crash-points"
)

// AppendLedger appends e to the ledger at path (creating it).
func AppendLedger(path string, e LedgerEntry) error {
	b, err := json.Marshal(e)
	if err != nil {
		return fmt.Errorf("encode ledger entry: %w", err)
	}
	f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return fmt.Errorf("open exploration ledger: %w", err)
	}
	if _, err := f.Write(append(b, '\n')); err != nil {
		f.Close()
		return fmt.Errorf("append to exploration ledger %s: %w", path, err)
	}
	return f.Close()
}

// LedgerTotals sums the ledger at path: explorations and violations by
// kind, and when the first entry was made. A missing ledger is empty.
type LedgerTotals struct {
	Since      time.Time
	Count      map[string]int
	Violations map[string]int
	Runs       int
	// Coverage sums the entries' coverage (nil if none has any).
	Coverage *scenarios.Coverage
	// Branches is the entry that reached the most error branches (the
	// counts of different commits do not add up), nil if none measured.
	Branches *LedgerEntry
}

// ReadLedger sums the ledger at path.
func ReadLedger(path string) (LedgerTotals, error) {
	t := LedgerTotals{Count: map[string]int{}, Violations: map[string]int{}}
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return t, nil
	}
	if err != nil {
		return t, fmt.Errorf("open exploration ledger: %w", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		var e LedgerEntry
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			return t, fmt.Errorf("exploration ledger %s line %d: %w", path, n, err)
		}
		if t.Since.IsZero() || e.At.Before(t.Since) {
			t.Since = e.At
		}
		t.Count[e.What] += e.Count
		t.Violations[e.What] += e.Violations
		t.Runs++
		if e.Branches != nil && (t.Branches == nil || e.Branches.Reached > t.Branches.Branches.Reached) {
			t.Branches = &e
		}
		if e.Coverage != nil {
			if t.Coverage == nil {
				t.Coverage = scenarios.NewCoverage()
			}
			t.Coverage.Merge(e.Coverage)
		}
	}
	return t, sc.Err()
}
