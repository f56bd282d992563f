package faults

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/outboxchaos/outboxchaos/fakevendor"
	"github.com/outboxchaos/outboxchaos/history"
	"github.com/outboxchaos/outboxchaos/rig"
)

// Fault is one fault as a value, in the shape of etcd robustness's
// Failpoint: it can be injected into a run's world and recovered from, it
// says whether it fired (did the pipeline meet it?), and it describes
// itself. A fault engine — not the scenario — records what was injected
// and whether it fired, and always recovers, even when a step fails.
type Fault interface {
	// Family names the kind of fault ("kill-point", "latency", …).
	Family() string
	// Target names what it acts on (a pod role, a link, a message).
	Target() string
	// Inject puts the fault in place.
	Inject(ctx context.Context, w World) error
	// Recover takes it away again; recovering twice is harmless.
	Recover(ctx context.Context, w World) error
	// Fired reports whether the pipeline met the fault, with the evidence.
	Fired(w World) (bool, string)
	// String describes the fault and its parameters.
	String() string
}

// PodFault is a fault armed in a pod as it starts (a kill-point, a
// failpoint, a clock step): Inject only remembers it; the pod's
// environment carries it.
type PodFault interface {
	Fault
	// PodEnv is the KEY=VALUE environment that arms the fault in a pod.
	PodEnv(w World) []string
}

// Momentary is a fault that acts once, as it is injected, and holds
// nothing after: a signal, a consent withdrawn, a message published. What
// it did shows in the pods, rows and queues, not as a fault still in
// place, so a run that only has these open may settle and jump its clock.
// Its Recover does nothing.
type Momentary interface {
	Fault
	// Momentary marks the kind; it does nothing.
	Momentary()
}

// World is what faults act on: one run's links, vendor, pods, database and
// broker, provided by the scenario engine. It hands faults handles, never
// the concrete pods and proxies of package rig: a fault says what it does
// through them and nothing more.
type World interface {
	// Link returns the Toxiproxy link called name.
	Link(name string) (LinkHandle, error)
	// Vendor is the fake SMS vendor.
	Vendor() *fakevendor.Server
	// Pods lists every pod started so far; Pod finds one by name.
	Pods() []PodHandle
	Pod(name string) (PodHandle, error)
	// Now is the run's virtual time.
	Now() time.Time
	// DB is the harness's own connection pool to the run's schema.
	DB() *pgxpool.Pool
	// Broker performs operator actions on the run's queues.
	Broker() Broker
	// Logf adds a line to the run's timeline.
	Logf(source, format string, args ...any)
}

// PodHandle is what a fault may see of and do to one pod of the pipeline.
type PodHandle interface {
	// Name is the pod's name in the run ("relay-1").
	Name() string
	// Env is the KEY=VALUE environment the pod was started with (how a pod
	// fault finds the pods it armed).
	Env() []string
	// Done is closed when the pod has exited; ExitCode is then its code.
	Done() <-chan struct{}
	ExitCode() int
	// Killpoint is the kill-point the pod said it died at, if any.
	Killpoint() (name string, hit bool)
	// Paused is the pause-point the pod froze at ("" if none); Continue
	// sends it SIGCONT.
	Paused() string
	Continue() error
	// Output is everything the pod wrote; Events its parsed log events.
	Output() string
	Events() []history.Event
	// Stop sends SIGTERM, then SIGKILL after timeout, and waits for exit.
	Stop(timeout time.Duration) error
	// Kill sends SIGKILL.
	Kill() error
}

// LinkHandle is what a fault may do to one Toxiproxy link: put a toxic on
// it, which the fault removes again on recover.
type LinkHandle interface {
	// Down refuses new connections and cuts the open ones.
	Down(ctx context.Context) (ToxicHandle, error)
	// Latency delays every byte on one direction.
	Latency(ctx context.Context, dir rig.Direction, delay time.Duration) (ToxicHandle, error)
	// Stall passes nothing on one direction until removed.
	Stall(ctx context.Context, dir rig.Direction) (ToxicHandle, error)
}

// ToxicHandle is one toxic on a link while it is in place.
type ToxicHandle interface {
	// Remove takes the toxic away (or brings the link up); twice is harmless.
	Remove() error
	// Report says what the toxic did, whether traffic met it among it.
	Report() rig.FaultReport
}

// Broker is what an operator can do to the run's RabbitMQ topology.
type Broker interface {
	// SetBinding binds or unbinds the main queue from the exchange.
	SetBinding(ctx context.Context, bound bool) error
	// ReplayParked publishes the parked copy of messageID back to the main
	// queue: the first call takes it out of the parking queue, later calls
	// replay the same copy again. It returns the copy's failure reason.
	ReplayParked(ctx context.Context, messageID string) (reason string, err error)
	// Publish puts a message on the main queue as a producer would
	// (persistent, confirmed).
	Publish(ctx context.Context, messageID string, body []byte) error
}

// Duration is a time.Duration written in JSON as Go's duration text ("1.5s").
type Duration time.Duration

// MarshalJSON writes the duration as text.
func (d Duration) MarshalJSON() ([]byte, error) { return json.Marshal(time.Duration(d).String()) }

// UnmarshalJSON reads duration text ("600ms") or a number of nanoseconds.
func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		var n int64
		if nerr := json.Unmarshal(b, &n); nerr != nil {
			return fmt.Errorf("duration: want text like \"1.5s\", got %s", b)
		}
		*d = Duration(n)
		return nil
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return fmt.Errorf("duration %q: %w", s, err)
	}
	*d = Duration(v)
	return nil
}

// D is the duration as a time.Duration.
func (d Duration) D() time.Duration { return time.Duration(d) }

// String prints the duration as Go does.
func (d Duration) String() string { return time.Duration(d).String() }
