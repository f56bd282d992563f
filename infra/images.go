package infra

import "os"

// Official images, used when the variables below are unset (a Docker host
// that can pull them).
const (
	OfficialPostgres = "postgres:15-alpine"
	OfficialRabbitMQ = "rabbitmq:3.10-alpine"
)

// Environment variables choosing the images.
const (
	EnvPGImage       = "OUTBOXCHAOS_PG_IMAGE"
	EnvRabbitMQImage = "OUTBOXCHAOS_RABBITMQ_IMAGE"
)

// EnvRunID labels every container (outboxchaos.run=<id>), so the run that
// set it (CI) can remove what a crashed test left behind, and only that.
const EnvRunID = "OUTBOXCHAOS_RUN_ID"

// PostgresImage is the Postgres image to run.
func PostgresImage() string { return envOr(EnvPGImage, OfficialPostgres) }

// RabbitMQImage is the RabbitMQ image to run.
func RabbitMQImage() string { return envOr(EnvRabbitMQImage, OfficialRabbitMQ) }

func envOr(k, def string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return def
}
