package cv

import (
	"context"
	"errors"
)

var errX = errors.New("x")

func F(ctx context.Context, err error) int {
	if err != nil {
		return 1
	}
	if errors.Is(err, errX) {
		return 2
	}
	select {
	case <-ctx.Done():
		return 3
	default:
	}
	return 0
}
