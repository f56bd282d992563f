package faults

import (
	"strings"
	"testing"
)

// TestApplies: each fault says whether it can act on a relay from what the
// relay declares, and why not.
func TestApplies(t *testing.T) {
	t.Parallel()
	declares := func(ps ...string) func(string) bool {
		return func(p string) bool { return strings.Contains(strings.Join(ps, " "), p) }
	}
	ours := Relay{Name: "ours", Broker: true, RelayPoint: declares("relay.after-claim"), WorkerPoint: declares("worker.after-send")}
	jetstream := Relay{Name: "js", JetStream: true, RelayPoint: declares("relay.after-claim")}
	quiet := ours
	quiet.Name, quiet.NoConfirms = "quiet", true
	perPublish := ours
	perPublish.Name, perPublish.ChannelPerPublish = "per-publish", true
	latency := Spec{Kind: KindLatency, Link: "rabbitmq-relay", Direction: "downstream", Delay: Duration(1)}
	for _, c := range []struct {
		s       Spec
		r       Relay
		inPlace bool
		why     string // "" applies
	}{
		{Spec{Kind: KindKillPoint, Point: "relay.after-claim"}, ours, false, ""},
		{Spec{Kind: KindKillPoint, Point: "relay.after-publish"}, ours, false, "ours declares no such point in its relay"},
		{Spec{Kind: KindPausePoint, Point: "worker.after-send"}, ours, false, ""},
		{Spec{Kind: KindKillPoint, Point: "worker.after-send"}, jetstream, false, "no consumer reads js's messages"},
		{Spec{Kind: KindUnbind}, jetstream, false, "publishes nothing to RabbitMQ"},
		{Spec{Kind: KindDown, Link: "rabbitmq-relay"}, jetstream, false, "faults the relay's RabbitMQ link"},
		{Spec{Kind: KindDown, Link: "postgres"}, jetstream, false, ""},
		{Spec{Kind: KindStall, Link: "nats-relay"}, ours, false, "faults JetStream (nats-relay)"},
		{Spec{Kind: KindCrash, Node: NodeNATS}, ours, false, "faults JetStream (nats)"},
		{Spec{Kind: KindCrash, Node: NodeNATS}, jetstream, false, ""},
		{latency, quiet, false, "publishes without confirms"},
		{latency, perPublish, false, ""},
		{latency, perPublish, true, "opens a channel for each publish"},
		{Spec{Kind: KindClock, By: Duration(1)}, jetstream, true, ""},
	} {
		ok, why := Applies(c.s, c.r, c.inPlace)
		if ok != (c.why == "") || (c.why != "" && !strings.Contains(why, c.why)) {
			t.Errorf("%s %s %s on %s: %v %q, want %q", c.s.Kind, c.s.Point+c.s.Link+c.s.Node, c.s.Direction, c.r.Name, ok, why, c.why)
		}
	}
}
