// Package infra runs a scenario's own infrastructure in containers with
// testcontainers-go: a PostgreSQL, and one RabbitMQ node or a cluster of
// three with a shared private epmd, all with host networking on 127.0.0.1
// and on free ports of their own, so that crashing, freezing or restarting
// them never touches the machine's shared services (5432, 5672, 4369).
//
// A *Containers is the faults.NodeControl the infrastructure faults act on: SIGKILL a
// node (Crash), stop it gracefully (Stop), start it again and wait until it
// serves (Start), freeze and thaw it (Pause, Unpause), find a quorum
// queue's leader (QueueLeader).
//
// Images: OUTBOXCHAOS_PG_IMAGE and OUTBOXCHAOS_RABBITMQ_IMAGE, by default
// the official postgres and rabbitmq images; on a machine without a
// registry `make images` builds equivalents offline from Debian's packages
// (.ci/images) and prints the two variables. testcontainers' reaper (Ryuk)
// is an image of its own, so it is off unless TESTCONTAINERS_RYUK_DISABLED
// says otherwise: Close removes every container, and callers register it
// with t.Cleanup so it runs even when a test fails half-way.
package infra
