package scenarios

import "math/rand"

// RandDraw draws schedule choices from a seeded math/rand source, so the
// same seed gives the same schedules (reports; rapid is for tests).
type RandDraw struct{ R *rand.Rand }

// NewRandDraw returns a draw seeded with seed.
func NewRandDraw(seed int64) RandDraw { return RandDraw{R: rand.New(rand.NewSource(seed))} }

// Int returns an integer in [lo, hi].
func (d RandDraw) Int(_ string, lo, hi int) int { return lo + d.R.Intn(hi-lo+1) }
