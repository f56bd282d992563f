package explore

import (
	"fmt"
	"strconv"
	"strings"
)

// Shard is one part of a budget spread over several runners: shard K of N
// takes the items whose index i has i mod N = K-1, and the random
// schedules of its own seed. Every shard is replayable alone: the same
// base seed and the same "K/N" give the same items and schedules. The zero
// Shard is the whole budget.
type Shard struct{ K, N int }

// ParseShard reads "K/N" (1 ≤ K ≤ N); "" is the whole budget.
func ParseShard(s string) (Shard, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return Shard{}, nil
	}
	ks, ns, ok := strings.Cut(s, "/")
	k, kerr := strconv.Atoi(ks)
	n, nerr := strconv.Atoi(ns)
	if !ok || kerr != nil || nerr != nil || n < 1 || k < 1 || k > n {
		return Shard{}, fmt.Errorf("shard %q: want K/N with 1 <= K <= N, e.g. 3/8", s)
	}
	return Shard{K: k, N: n}, nil
}

// String is "K/N", or "all" for the whole budget.
func (s Shard) String() string {
	if s.N <= 1 {
		return "all"
	}
	return fmt.Sprintf("%d/%d", s.K, s.N)
}

// Has reports whether item i (0-based) belongs to this shard.
func (s Shard) Has(i int) bool { return s.N <= 1 || i%s.N == s.K-1 }

// Share is this shard's part of total: the items of 0..total-1 it has.
func (s Shard) Share(total int) int {
	n := 0
	for i := 0; i < total; i++ {
		if s.Has(i) {
			n++
		}
	}
	return n
}

// Seed derives this shard's seed from the run's base seed, so shards draw
// different schedules; the whole budget keeps the base seed.
func (s Shard) Seed(base uint64) uint64 {
	if s.N <= 1 {
		return base
	}
	// SplitMix64's finaliser over (base, K, N): a well-spread, stable seed.
	x := base ^ uint64(s.K)<<32 ^ uint64(s.N)
	x += 0x9e3779b97f4a7c15
	x = (x ^ x>>30) * 0xbf58476d1ce4e5b9
	x = (x ^ x>>27) * 0x94d049bb133111eb
	return x ^ x>>31
}
