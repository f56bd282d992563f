package reports

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"sort"
	"time"

	"github.com/outboxchaos/outboxchaos/branches"
	"github.com/outboxchaos/outboxchaos/checker"
	"github.com/outboxchaos/outboxchaos/scenarios/explore"
)

// Exploration is one finished exploration, appended to the exploration
// ledger (reports/explored.jsonl) by make explore, make crashpoints and
// make report, so the report can show what has been explored in all.
type Exploration struct {
	At         time.Time `json:"at"`
	Commit     string    `json:"commit"`
	What       string    `json:"what"` // "schedules" or "crash-points"
	Count      int       `json:"count"`
	Violations int       `json:"violations"`
	Seed       int64     `json:"seed"`
	Shard      string    `json:"shard,omitempty"`
	// Coverage is what the judged schedules' fired faults reached, fault
	// family × pipeline phase, single and pairwise (random schedules only).
	Coverage *explore.Coverage `json:"coverage,omitempty"`
	// Branches is how many error branches of system/ the exploration's
	// pods reached (run with --cover-dir), of how many, and which.
	Branches *BranchCount `json:"branches,omitempty"`
	// Invariants are, per invariant, the runs it judged and what it found
	// (entries written before the ledger kept them have none).
	Invariants map[string]InvariantCount `json:"invariants,omitempty"`
}

// InvariantCount is what one invariant did over an exploration: the runs
// it judged (a run it could not judge, or one not judged at all, is not
// counted), the runs it found broken, and its violations in them.
type InvariantCount struct {
	Judged     int `json:"judged"`
	Broken     int `json:"broken,omitempty"`
	Violations int `json:"violations,omitempty"`
}

// CountInvariants sums the invariants' results over verdicts.
func CountInvariants(verdicts []checker.Verdict) map[string]InvariantCount {
	out := map[string]InvariantCount{}
	for _, v := range verdicts {
		for _, r := range v.Invariants {
			if r.NotJudged != "" {
				continue
			}
			c := out[r.Name]
			c.Judged++
			if !r.Valid {
				c.Broken++
				c.Violations += r.Violations
			}
			out[r.Name] = c
		}
	}
	return out
}

// BranchCount is error branches reached of a total (package branches),
// and which ones.
type BranchCount struct {
	Reached int `json:"reached"`
	Total   int `json:"total"`
	// Keys name the branches reached (branches.Key: file under system/,
	// function, guard; no line number, so they outlive edits). Entries
	// written before the ledger kept them have none: they count, but add
	// nothing to the union of what was ever reached.
	Keys []string `json:"keys,omitempty"`
}

// CountBranches counts what m reached and names it (nil: not measured).
func CountBranches(m *branches.Map) *BranchCount {
	if m == nil {
		return nil
	}
	r, n := m.Totals()
	return &BranchCount{Reached: r, Total: n, Keys: m.ReachedKeys()}
}

// Ledger kinds.
const (
	LedgerSchedules   = "schedules"
	LedgerCrashPoints = "crash-points"
)

// AppendLedger appends e to the ledger at path (creating it).
func AppendLedger(path string, e Exploration) error {
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
	Coverage *explore.Coverage
	// Branches is the entry that reached the most error branches (the
	// counts of different commits do not add up), nil if none measured.
	Branches *Exploration
	// BranchesEver is the union of the reached branches of every entry
	// that named them (BranchCount.Keys), by key: the last entry to reach
	// each. A key may name a branch the source no longer has
	// (branches.Map.AddEarlier drops those).
	BranchesEver map[string]BranchSeen
	// BranchRuns is how many entries named the branches they reached.
	BranchRuns int
	// Invariants sums the entries' per-invariant counts (entries that
	// kept none add nothing); InvariantRuns is how many entries kept them.
	Invariants    map[string]InvariantCount
	InvariantRuns int
}

// BranchSeen is the ledger entry that last reached a branch.
type BranchSeen struct {
	Commit string
	At     time.Time
}

// EverKeys are the keys of BranchesEver, sorted.
func (t LedgerTotals) EverKeys() []string {
	out := make([]string, 0, len(t.BranchesEver))
	for k := range t.BranchesEver {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
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
	// A line holds an exploration's coverage and the keys of the branches
	// it reached: tens of kilobytes, past bufio's 64 KiB default soon.
	sc.Buffer(make([]byte, 0, 1<<16), 16<<20)
	for n := 1; sc.Scan(); n++ {
		var e Exploration
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			return t, fmt.Errorf("exploration ledger %s line %d: %w", path, n, err)
		}
		if t.Since.IsZero() || e.At.Before(t.Since) {
			t.Since = e.At
		}
		t.Count[e.What] += e.Count
		t.Violations[e.What] += e.Violations
		t.Runs++
		if len(e.Invariants) > 0 {
			if t.Invariants == nil {
				t.Invariants = map[string]InvariantCount{}
			}
			t.InvariantRuns++
			for name, c := range e.Invariants {
				s := t.Invariants[name]
				s.Judged, s.Broken, s.Violations = s.Judged+c.Judged, s.Broken+c.Broken, s.Violations+c.Violations
				t.Invariants[name] = s
			}
		}
		if e.Branches != nil && (t.Branches == nil || e.Branches.Reached > t.Branches.Branches.Reached) {
			t.Branches = &e
		}
		if e.Branches != nil && len(e.Branches.Keys) > 0 {
			if t.BranchesEver == nil {
				t.BranchesEver = map[string]BranchSeen{}
			}
			t.BranchRuns++
			for _, k := range e.Branches.Keys {
				if s, ok := t.BranchesEver[k]; !ok || e.At.After(s.At) {
					t.BranchesEver[k] = BranchSeen{Commit: e.Commit, At: e.At}
				}
			}
		}
		if e.Coverage != nil {
			if t.Coverage == nil {
				t.Coverage = explore.NewCoverage()
			}
			t.Coverage.Merge(e.Coverage)
		}
	}
	if err := sc.Err(); err != nil {
		return t, fmt.Errorf("read exploration ledger %s: %w", path, err)
	}
	return t, nil
}
