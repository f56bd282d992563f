package reports

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strings"

	"github.com/outboxchaos/outboxchaos/scenarios/explore"
)

// ReadLedgerEntries reads every entry of the ledger in r, in order; name
// says where it came from in errors.
func ReadLedgerEntries(r io.Reader, name string) ([]Exploration, error) {
	var out []Exploration
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 1<<16), 16<<20)
	for n := 1; sc.Scan(); n++ {
		if strings.TrimSpace(sc.Text()) == "" {
			continue
		}
		var e Exploration
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			return nil, fmt.Errorf("exploration ledger %s line %d: %w", name, n, err)
		}
		out = append(out, e)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read exploration ledger %s: %w", name, err)
	}
	return out, nil
}

// ReadLedgerFile is ReadLedgerEntries of the file at path.
func ReadLedgerFile(path string) ([]Exploration, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("open exploration ledger: %w", err)
	}
	defer f.Close()
	return ReadLedgerEntries(f, path)
}

// budgetKey names one budget spread over shards: the shards of one
// exploration share its commit, kind, base seed and shard count.
type budgetKey struct {
	commit, what string
	seed         int64
	n            int
}

// MergeShards folds the entries of each budget run as shards (shards 1/N
// to N/N of one commit, kind and seed, as a CI matrix writes them, one
// ledger per runner) into one entry for the whole budget, where its first
// shard was: explorations, violations and each invariant's counts summed,
// coverage merged, the error branches reached united (their count is the
// union's size when every shard named them, else the most any shard
// reached), its time the last shard's. Entries not run as shards pass
// through. A budget with a shard missing or twice is an error, naming it:
// its merge would not be the budget's totals.
func MergeShards(es []Exploration) ([]Exploration, error) {
	groups := map[budgetKey][]int{}
	var order []budgetKey
	first := map[int]budgetKey{}
	for i, e := range es {
		sh, err := explore.ParseShard(e.Shard)
		if err != nil {
			return nil, fmt.Errorf("ledger entry %d: %w", i+1, err)
		}
		if sh.N <= 1 {
			continue
		}
		k := budgetKey{e.Commit, e.What, e.Seed, sh.N}
		if _, ok := groups[k]; !ok {
			order = append(order, k)
			first[i] = k
		}
		groups[k] = append(groups[k], i)
	}
	merged := map[budgetKey]Exploration{}
	for _, k := range order {
		m, err := mergeBudget(k, es, groups[k])
		if err != nil {
			return nil, err
		}
		merged[k] = m
	}
	var out []Exploration
	for i, e := range es {
		sh, _ := explore.ParseShard(e.Shard)
		if sh.N <= 1 {
			out = append(out, e)
			continue
		}
		if k, ok := first[i]; ok {
			out = append(out, merged[k])
		}
	}
	return out, nil
}

// mergeBudget folds the shards at idx of es, which make up budget k.
func mergeBudget(k budgetKey, es []Exploration, idx []int) (Exploration, error) {
	seen := map[int]int{}
	for _, i := range idx {
		sh, _ := explore.ParseShard(es[i].Shard)
		seen[sh.K]++
	}
	var missing, twice []string
	for s := 1; s <= k.n; s++ {
		switch {
		case seen[s] == 0:
			missing = append(missing, fmt.Sprintf("%d/%d", s, k.n))
		case seen[s] > 1:
			twice = append(twice, fmt.Sprintf("%d/%d", s, k.n))
		}
	}
	if len(missing) > 0 || len(twice) > 0 {
		return Exploration{}, fmt.Errorf("%s of seed %d at %s: shards missing %v, recorded more than once %v",
			k.what, k.seed, k.commit, missing, twice)
	}
	m := Exploration{Commit: k.commit, What: k.what, Seed: k.seed}
	keys := map[string]bool{}
	allNamed := true
	for _, i := range idx {
		e := es[i]
		if e.At.After(m.At) {
			m.At = e.At
		}
		m.Count += e.Count
		m.Violations += e.Violations
		if e.Coverage != nil {
			if m.Coverage == nil {
				m.Coverage = explore.NewCoverage()
			}
			m.Coverage.Merge(e.Coverage)
		}
		for name, c := range e.Invariants {
			if m.Invariants == nil {
				m.Invariants = map[string]InvariantCount{}
			}
			s := m.Invariants[name]
			s.Judged, s.Broken, s.Violations = s.Judged+c.Judged, s.Broken+c.Broken, s.Violations+c.Violations
			m.Invariants[name] = s
		}
		if e.Branches == nil {
			continue
		}
		if m.Branches == nil {
			m.Branches = &BranchCount{}
		}
		m.Branches.Total = max(m.Branches.Total, e.Branches.Total)
		m.Branches.Reached = max(m.Branches.Reached, e.Branches.Reached)
		if len(e.Branches.Keys) == 0 {
			allNamed = false
		}
		for _, key := range e.Branches.Keys {
			keys[key] = true
		}
	}
	if m.Branches != nil && len(keys) > 0 {
		m.Branches.Keys = slices.Sorted(maps.Keys(keys))
		if allNamed {
			m.Branches.Reached = len(keys)
		}
	}
	return m, nil
}

// WriteLedgerEntries writes es as a ledger, one JSON object a line.
func WriteLedgerEntries(w io.Writer, es []Exploration) error {
	enc := json.NewEncoder(w)
	for _, e := range es {
		if err := enc.Encode(e); err != nil {
			return fmt.Errorf("write ledger entry: %w", err)
		}
	}
	return nil
}
