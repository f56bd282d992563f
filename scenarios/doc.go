// Package scenarios is what a user of the harness needs to run a
// scenario: Run runs one (a catalogue entry, a random schedule, a file)
// against the real pipeline on real Postgres and RabbitMQ and has the
// checker judge what actually happened; Open builds a run's world for a
// driver of its own (the simulator); Recheck judges a recorded run again.
// The named scenarios are data in package catalogue, the random schedules
// are drawn by package explore, and the engine that carries a run out
// lives behind the internal boundary (scenarios/internal/run).
package scenarios
