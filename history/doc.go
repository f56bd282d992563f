// Package history is the vocabulary of a run's history: the one Event type
// (a pod's structured log line that names an event), the event names and
// attribute keys the pipeline logs, and the attribute values a reader may
// compare. The pipeline (system/) logs with these constants; the checker
// and the scenario harness read events by them. Nothing reads a log
// message's text: the message ("msg") is for people, the event name and
// its attributes are for programs.
//
// The package is pure (it parses a line, it never reads one), so the
// checker may import it and stay free of I/O.
package history
