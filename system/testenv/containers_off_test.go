//go:build !containers

package testenv

import (
	"context"
	"strings"
	"testing"
)

func TestStartContainersWithoutTagSaysHowToEnable(t *testing.T) {
	_, _, err := startContainers(context.Background())
	if err == nil || !strings.Contains(err.Error(), "go test -tags containers ./...") {
		t.Fatalf("err = %v, want one naming the containers tag", err)
	}
	if err := StopContainers(); err != nil {
		t.Fatalf("StopContainers: %v", err)
	}
}
