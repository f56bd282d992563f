package jetstream

import (
	"testing"

	"github.com/outboxchaos/outboxchaos/peers"
)

// TestRegistryDeclaresWhatTheAdapterDoes: the registry entry the peer
// cases read (peers.Features, deadlines) says what this package does — the
// stream and probe subject the harness's window probe uses, the duplicate
// window and ack wait it runs with.
func TestRegistryDeclaresWhatTheAdapterDoes(t *testing.T) {
	p, err := peers.Lookup(Adapter{}.Name())
	if err != nil {
		t.Fatal(err)
	}
	f := p.Features
	if !f.Consumer || f.Broker || f.JetStream == nil || f.JetStream.Stream != Stream || f.JetStream.ProbeSubject != ProbeSubject {
		t.Fatalf("features %+v do not match the adapter (stream %s, probe %s, own consumer, no RabbitMQ)", f, Stream, ProbeSubject)
	}
	want := map[string]string{"duplicate-window": DuplicateWindow.String(), "ack-wait": AckWait.String()}
	for _, d := range p.Deadlines {
		if v, ok := want[d.Name]; ok {
			if d.Value != v {
				t.Errorf("deadline %s declared %s, the adapter runs %s", d.Name, d.Value, v)
			}
			delete(want, d.Name)
		}
	}
	for name := range want {
		t.Errorf("deadline %s not declared", name)
	}
	if p.Binary != "peer-jetstream" {
		t.Errorf("binary %q, want peer-jetstream", p.Binary)
	}
}
