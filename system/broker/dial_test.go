package broker_test

import (
	"slices"
	"strings"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/outboxchaos/outboxchaos/system/broker"
	"github.com/outboxchaos/outboxchaos/system/canary"
	"github.com/outboxchaos/outboxchaos/system/testenv"
)

func TestURLsSplitsAClusterSetting(t *testing.T) {
	got := broker.URLs(" amqp://a:1/ ,amqp://b:2/,, amqp://c:3/")
	if want := []string{"amqp://a:1/", "amqp://b:2/", "amqp://c:3/"}; !slices.Equal(got, want) {
		t.Fatalf("URLs = %q, want %q", got, want)
	}
}

// A dead first node: Dial reaches the live second one, and the
// FirstBrokerOnly canary, which never looks past the first, cannot.
func TestDialFailsOverToALiveNode(t *testing.T) {
	testenv.Require(t)
	dead := "amqp://guest:guest@127.0.0.1:1/"
	setting := dead + "," + testenv.AMQPURL()
	cfg := amqp.Config{Dial: amqp.DefaultDial(2 * time.Second)}
	conn, reached, err := broker.Dial(setting, cfg)
	if err != nil {
		t.Fatalf("Dial(%s): %v", setting, err)
	}
	_ = conn.Close()
	if reached != testenv.AMQPURL() {
		t.Fatalf("reached %s, want the live node %s", reached, testenv.AMQPURL())
	}

	if err := canary.Arm(canary.FirstBrokerOnly); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = canary.Arm("") })
	if conn, _, err := broker.Dial(setting, cfg); err == nil {
		_ = conn.Close()
		t.Fatal("with first-broker-only armed, Dial reached a node past the first")
	} else if !strings.Contains(err.Error(), "127.0.0.1:1") {
		t.Fatalf("error %v does not name the dead node", err)
	}
}
