//go:build containers

package testenv

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/testcontainers/testcontainers-go"
	"github.com/testcontainers/testcontainers-go/modules/postgres"
	"github.com/testcontainers/testcontainers-go/modules/rabbitmq"
)

// Images and credentials of the containers startContainers runs.
const (
	postgresImage = "postgres:15-alpine"
	rabbitImage   = "rabbitmq:3.10-alpine"
	pgDatabase    = "test"
	pgUser        = "postgres"
	pgPassword    = "postgres"
)

// dockerCheckTimeout bounds the Docker engine health check.
const dockerCheckTimeout = 15 * time.Second

var (
	containersMu sync.Mutex
	// running are the containers started by startContainers, kept so that
	// StopContainers can terminate them.
	running []testcontainers.Container
)

// startContainers checks that a Docker engine answers, then starts
// PostgreSQL and RabbitMQ containers, waits until both are ready and returns
// their URLs. On failure it terminates whatever it started.
//
// The containers carry testcontainers' session labels, so its reaper (Ryuk)
// removes them when the test binary exits; call StopContainers (from
// TestMain, say) to remove them sooner, or when Ryuk is disabled.
func startContainers(ctx context.Context) (pgURL, amqpURL string, err error) {
	if err := dockerHealthy(ctx); err != nil {
		return "", "", err
	}

	var (
		wg                 sync.WaitGroup
		pgErr, rabbitErr   error
		pgCtr              *postgres.PostgresContainer
		rabbitCtr          *rabbitmq.RabbitMQContainer
		pgConn, rabbitConn string
	)
	wg.Go(func() {
		pgCtr, pgErr = postgres.Run(ctx, postgresImage,
			postgres.WithDatabase(pgDatabase),
			postgres.WithUsername(pgUser),
			postgres.WithPassword(pgPassword),
			postgres.BasicWaitStrategies(),
		)
		if pgErr != nil {
			pgErr = fmt.Errorf("start Postgres container (%s): %w", postgresImage, pgErr)
			return
		}
		if pgConn, pgErr = pgCtr.ConnectionString(ctx, "sslmode=disable"); pgErr != nil {
			pgErr = fmt.Errorf("Postgres container URL: %w", pgErr)
		}
	})
	wg.Go(func() {
		rabbitCtr, rabbitErr = rabbitmq.Run(ctx, rabbitImage)
		if rabbitErr != nil {
			rabbitErr = fmt.Errorf("start RabbitMQ container (%s): %w", rabbitImage, rabbitErr)
			return
		}
		if rabbitConn, rabbitErr = rabbitCtr.AmqpURL(ctx); rabbitErr != nil {
			rabbitErr = fmt.Errorf("RabbitMQ container URL: %w", rabbitErr)
		}
	})
	wg.Wait()

	// Keep every handle, even of a failed start, so StopContainers can
	// terminate it. A nil *PostgresContainer inside the interface is
	// skipped by testcontainers.TerminateContainer.
	containersMu.Lock()
	if pgCtr != nil {
		running = append(running, pgCtr)
	}
	if rabbitCtr != nil {
		running = append(running, rabbitCtr)
	}
	containersMu.Unlock()

	if err := errors.Join(pgErr, rabbitErr); err != nil {
		if stopErr := StopContainers(); stopErr != nil {
			err = errors.Join(err, stopErr)
		}
		return "", "", err
	}
	return pgConn, rabbitConn, nil
}

// dockerHealthy returns an error unless a Docker engine answers, found the
// way testcontainers finds one (DOCKER_HOST, ~/.testcontainers.properties,
// the default sockets).
func dockerHealthy(ctx context.Context) (err error) {
	ctx, cancel := context.WithTimeout(ctx, dockerCheckTimeout)
	defer cancel()
	// testcontainers panics when it finds no Docker host at all.
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("no Docker engine found (%s; testcontainers: %v); start one, or set DOCKER_HOST", dockerHint(), r)
		}
	}()
	provider, err := testcontainers.NewDockerProvider()
	if err != nil {
		return fmt.Errorf("no Docker engine found (%s): %w; start one, or set DOCKER_HOST", dockerHint(), err)
	}
	// Health closes the provider.
	if err := provider.Health(ctx); err != nil {
		return fmt.Errorf("Docker engine does not answer (%s): %w; start one, or set DOCKER_HOST", dockerHint(), err)
	}
	return nil
}

// dockerHint says where a Docker engine was looked for, for error messages.
func dockerHint() string {
	host := "DOCKER_HOST unset"
	if v := os.Getenv("DOCKER_HOST"); v != "" {
		host = "DOCKER_HOST=" + v
	}
	sock := "/var/run/docker.sock absent"
	if _, err := os.Stat("/var/run/docker.sock"); err == nil {
		sock = "/var/run/docker.sock present"
	}
	return host + ", " + sock
}

// StopContainers terminates the containers Check started, if any. It is
// safe to call more than once and from TestMain after m.Run; without it the
// containers are removed by testcontainers' reaper (Ryuk) when the test
// binary exits, unless Ryuk is disabled.
func StopContainers() error {
	containersMu.Lock()
	ctrs := running
	running = nil
	containersMu.Unlock()
	var errs []error
	for _, c := range ctrs {
		if err := testcontainers.TerminateContainer(c); err != nil {
			errs = append(errs, fmt.Errorf("stop container: %w", err))
		}
	}
	return errors.Join(errs...)
}
