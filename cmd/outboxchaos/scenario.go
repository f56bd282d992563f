package main

import (
	"context"
	"errors"
	"io"
)

var errVerdictFailed = errors.New("verdict: FAIL")

func runScenario(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	return usagef("scenarios are not built yet")
}
