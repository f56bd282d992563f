package broker

import (
	"errors"
	"fmt"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/outboxchaos/outboxchaos/system/canary"
)

// URLs splits an AMQP setting into its broker addresses: one URL, or
// several separated by commas (the nodes of a cluster).
func URLs(setting string) []string {
	var out []string
	for _, u := range strings.Split(setting, ",") {
		if u = strings.TrimSpace(u); u != "" {
			out = append(out, u)
		}
	}
	return out
}

// live holds, per setting, the index of the address the last successful
// dial used: the next dial starts there, so a process stays on a node that
// answers and moves on only when it stops answering.
var live sync.Map // setting → *atomic.Int64

// Dial connects to the first broker address of setting that answers,
// starting with the one that answered last, so that after a node dies the
// process reconnects to a live one. It returns the connection and the URL it
// reached; the error names every address that failed. With the
// FirstBrokerOnly canary armed it only ever tries the first address.
func Dial(setting string, cfg amqp.Config) (*amqp.Connection, string, error) {
	urls := URLs(setting)
	if len(urls) == 0 {
		return nil, "", errors.New("no RabbitMQ address (set OUTBOXCHAOS_AMQP_URL or --amqp-url)")
	}
	if canary.On(canary.FirstBrokerOnly) {
		urls = urls[:1]
	}
	v, _ := live.LoadOrStore(setting, new(atomic.Int64))
	last := v.(*atomic.Int64)
	start := int(last.Load()) % len(urls)
	var errs []error
	for i := range urls {
		n := (start + i) % len(urls)
		conn, err := amqp.DialConfig(urls[n], cfg)
		if err == nil {
			last.Store(int64(n))
			return conn, urls[n], nil
		}
		errs = append(errs, fmt.Errorf("%s: %w", Redacted(urls[n]), err))
	}
	return nil, "", fmt.Errorf("no RabbitMQ node answers: %w", errors.Join(errs...))
}

// Redacted is the URL s with its password hidden, for logs.
func Redacted(s string) string {
	u, err := url.Parse(s)
	if err != nil {
		return "(unparsable URL)"
	}
	return u.Redacted()
}
