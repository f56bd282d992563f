// Package layering holds the module's import rules in one table (its
// test): which of the module's packages each package may import, and the
// outside packages some may not depend on at all. The pipeline knows
// nothing of the harness that judges it, the checker does no I/O, no peer
// binary links the benchmark, and nothing imports a command.
package layering
