//go:build !containers

package testenv

import (
	"context"
	"errors"
)

// errNoContainersTag is startContainers' error in builds without the
// containers tag.
var errNoContainersTag = errors.New("built without the containers tag; run `go test -tags containers ./...` " +
	"to start PostgreSQL and RabbitMQ in Docker")

// startContainers would start PostgreSQL and RabbitMQ in Docker; this build
// lacks the containers tag, so it only says how to get one that does.
func startContainers(context.Context) (pgURL, amqpURL string, err error) {
	return "", "", errNoContainersTag
}

// StopContainers terminates the containers Check started. Without the
// containers tag none are ever started, so it does nothing.
func StopContainers() error { return nil }
