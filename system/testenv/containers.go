//go:build containers

package testenv

import (
	"context"
	"log/slog"
	"os"
	"sync"

	"github.com/outboxchaos/outboxchaos/infra"
)

var (
	containersMu sync.Mutex
	// running is what startContainers started, kept so that
	// StopContainers can remove it.
	running *infra.Containers
)

// startContainers starts PostgreSQL and RabbitMQ in containers (package
// infra: host networking on free ports of 127.0.0.1, the images of
// OUTBOXCHAOS_PG_IMAGE / OUTBOXCHAOS_RABBITMQ_IMAGE or the official ones),
// waits until both serve and returns their URLs. On failure nothing is
// left running.
//
// testcontainers' reaper is off (its image cannot be pulled without a
// registry): call StopContainers from TestMain to remove them; every
// container carries the label outboxchaos, by which CI removes stragglers.
func startContainers(ctx context.Context) (pgURL, amqpURL string, err error) {
	in, err := infra.Start(ctx, infra.Options{Postgres: true, RabbitNodes: 1,
		Log: slog.New(slog.NewTextHandler(os.Stderr, nil)).With("component", "testenv")})
	if err != nil {
		return "", "", err
	}
	containersMu.Lock()
	running = in
	containersMu.Unlock()
	return in.PGURL(), in.AMQPURL(), nil
}

// StopContainers removes the containers Check started, if any. It is safe
// to call more than once, and from TestMain after m.Run.
func StopContainers() error {
	containersMu.Lock()
	in := running
	running = nil
	containersMu.Unlock()
	if in == nil {
		return nil
	}
	return in.Close(context.Background())
}
