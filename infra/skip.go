package infra

import (
	"context"
	"os"
	"testing"
)

// Require skips t when no Docker engine answers, with a message saying how
// to get one; in CI (CI=true) it fails instead, so a broken engine is
// never a silent skip.
func Require(t testing.TB) {
	t.Helper()
	err := Available(context.Background())
	if err == nil {
		return
	}
	if os.Getenv("CI") == "true" {
		t.Fatalf("infrastructure tests need a Docker engine and CI=true: %v", err)
	}
	t.Skipf("no Docker engine, so the infrastructure tests skip (install one, or run bash .ci/images/docker-up): %v", err)
}

// StartT starts o's containers for a test and removes them in t.Cleanup,
// even when the test fails half-way.
func StartT(t testing.TB, o Options) *Containers {
	t.Helper()
	Require(t)
	in, err := Start(context.Background(), o)
	if err != nil {
		t.Fatalf("start containers: %v", err)
	}
	t.Cleanup(func() {
		if err := in.Close(context.Background()); err != nil {
			t.Errorf("remove containers: %v", err)
		}
	})
	return in
}
