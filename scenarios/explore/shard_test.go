package explore

import "testing"

// TestShard: the shards of a budget are disjoint, cover it, parse their
// own spelling, refuse bad ones, and draw seeds of their own.
func TestShard(t *testing.T) {
	t.Parallel()
	const n, total = 8, 2000
	seen := make([]int, total)
	seeds := map[uint64]bool{}
	sum := 0
	for k := 1; k <= n; k++ {
		s, err := ParseShard(Shard{K: k, N: n}.String())
		if err != nil || s != (Shard{K: k, N: n}) {
			t.Fatalf("ParseShard(%d/%d) = %v, %v", k, n, s, err)
		}
		for i := 0; i < total; i++ {
			if s.Has(i) {
				seen[i]++
			}
		}
		sum += s.Share(total)
		seeds[s.Seed(42)] = true
	}
	for i, c := range seen {
		if c != 1 {
			t.Fatalf("item %d in %d shards, want exactly 1", i, c)
		}
	}
	if sum != total || len(seeds) != n {
		t.Fatalf("shares add to %d (want %d), %d distinct seeds (want %d)", sum, total, len(seeds), n)
	}
	if whole, _ := ParseShard(""); !whole.Has(7) || whole.Seed(42) != 42 || whole.Share(5) != 5 {
		t.Fatalf("the whole budget is not the zero shard: %+v", whole)
	}
	for _, bad := range []string{"0/8", "9/8", "3", "a/b", "3/0", "-1/4"} {
		if _, err := ParseShard(bad); err == nil {
			t.Errorf("ParseShard(%q) accepted", bad)
		}
	}
}
