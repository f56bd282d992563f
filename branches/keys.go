package branches

import (
	"fmt"
	"sort"
)

// Key names a branch stably across edits, so a record of which branches a
// run reached outlives the commit it was made at (the exploration
// ledger): its file under system/ (SystemRel), its function and its guard
// text, the way unreachable.tsv names branches, and no line number, which
// drifts with every edit above it:
//
//	relay/relay.go:Relay.RunOnce:err := tx.Commit(ctx); err != nil
//
// When one function has several branches with the same guard, the second
// and later (in source order) carry their rank after the function:
// "relay/relay.go:Relay.RunOnce#2:…". File and function hold no colon, so
// the first two colons split a key.
func Key(b Branch, rank int) string {
	fn := b.Func
	if rank > 1 {
		fn = fmt.Sprintf("%s#%d", fn, rank)
	}
	return SystemRel(b.File) + ":" + fn + ":" + b.Guard
}

// Keys names each of bs by Key, by ID, ranking the branches of a function
// that share a guard by line.
func Keys(bs []Branch) map[string]string {
	order := make([]Branch, len(bs))
	copy(order, bs)
	sort.SliceStable(order, func(i, j int) bool {
		if order[i].File != order[j].File {
			return order[i].File < order[j].File
		}
		return order[i].Line < order[j].Line
	})
	seen := map[string]int{}
	out := make(map[string]string, len(bs))
	for _, b := range order {
		k := Key(b, 1)
		seen[k]++
		out[b.ID()] = Key(b, seen[k])
	}
	return out
}

// ReachedKeys are the keys of the branches m's runs reached, sorted.
func (m *Map) ReachedKeys() []string {
	var out []string
	for id, k := range Keys(m.Branches) {
		if m.Reached[id] {
			out = append(out, k)
		}
	}
	sort.Strings(out)
	return out
}

// AddEarlier records, in m.Earlier, the branches of m that earlier runs
// reached, named by key (a union of ReachedKeys, as the exploration ledger
// keeps them), and returns the keys that name no branch of m: the code
// changed (the branch went, moved to another function, or its guard was
// edited), so what reached it then says nothing about the source now.
func (m *Map) AddEarlier(keys []string) (gone []string) {
	byKey := map[string]string{}
	for id, k := range Keys(m.Branches) {
		byKey[k] = id
	}
	if m.Earlier == nil {
		m.Earlier = map[string]bool{}
	}
	for _, k := range keys {
		id, ok := byKey[k]
		if !ok {
			gone = append(gone, k)
			continue
		}
		m.Earlier[id] = true
	}
	sort.Strings(gone)
	return gone
}

// Ever says whether the branch with this ID was reached by m's runs or by
// earlier ones (AddEarlier).
func (m *Map) Ever(id string) bool { return m.Reached[id] || m.Earlier[id] }
