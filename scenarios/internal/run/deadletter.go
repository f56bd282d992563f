package run

import (
	"context"
	"fmt"
	"net/url"
	"os/exec"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// RabbitMQ forwards a quorum queue's dead letters at least once
// (x-dead-letter-strategy at-least-once): the retry queue's expired
// messages go back to the main queue. When the main queue is over its
// x-max-length (queue-max-length, reject-publish) it refuses them, and the
// queue's dead-letter worker tries again only after
// dead_letter_worker_publisher_confirm_timeout: 180 s by default. Until
// then the message is in no queue a client can count, and a run settles
// (30 s) before it comes back: the harness would call it lost silently.
// It is a timer of the broker that no configuration of the pods compresses,
// so the harness needs the broker's own setting compressed too (1 s on
// every broker it starts, and in .ci/run), and does not judge a run that
// could meet it on a broker that waits longer.
const (
	deadLetterSetting = "dead_letter_worker_publisher_confirm_timeout"
	// deadLetterMax is the longest dead-letter retry a run is judged with:
	// far below the settle bound.
	deadLetterMax = 5 * time.Second
)

// deadLetterFix is how to compress the broker's timer.
const deadLetterFix = "rabbitmqctl eval 'application:set_env(rabbit, " + deadLetterSetting + ", 1000).' " +
	"(or start it with RABBITMQ_SERVER_ADDITIONAL_ERL_ARGS=\"-rabbit " + deadLetterSetting + " 1000\"); docs/harness.md, Time that jumps"

var deadLetterChecks sync.Map // AMQP URL → deadLetterCheck

// deadLetterCheck is what the broker at one URL said, read once per process.
type deadLetterCheck struct {
	once  sync.Once
	retry time.Duration // 0: unknown
	why   string        // why unknown
}

// deadLetterRetry reads the broker's dead-letter retry through rabbitmqctl
// on this machine, once per URL and process. The node rabbitmqctl reaches
// must be the one the URL names (an AMQP listener on its port); otherwise,
// or without rabbitmqctl, the retry is unknown (0) and why says so.
func deadLetterRetry(ctx context.Context, amqpURL string) (time.Duration, string) {
	v, _ := deadLetterChecks.LoadOrStore(amqpURL, &deadLetterCheck{})
	c := v.(*deadLetterCheck)
	c.once.Do(func() { c.retry, c.why = readDeadLetterRetry(ctx, amqpURL) })
	return c.retry, c.why
}

var deadLetterAnswer = regexp.MustCompile(`^\{\{ok,(\d+)\},\[([0-9,]*)\]\}`)

func readDeadLetterRetry(ctx context.Context, amqpURL string) (time.Duration, string) {
	u, err := url.Parse(amqpURL)
	if err != nil {
		return 0, fmt.Sprintf("parse RabbitMQ URL: %v", err)
	}
	if h := u.Hostname(); h != "127.0.0.1" && h != "localhost" && h != "::1" {
		return 0, "the broker is not on this machine"
	}
	port := u.Port()
	if port == "" {
		port = "5672"
	}
	ctl, err := exec.LookPath("rabbitmqctl")
	if err != nil {
		return 0, "no rabbitmqctl on PATH"
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	expr := "{application:get_env(rabbit, " + deadLetterSetting + "), " +
		"[P || {listener, _, amqp, _, _, P, _} <- rabbit_networking:active_listeners()]}."
	out, err := exec.CommandContext(ctx, ctl, "-q", "eval", expr).Output()
	if err != nil {
		return 0, fmt.Sprintf("rabbitmqctl eval: %v", err)
	}
	return parseDeadLetterAnswer(string(out), port)
}

// parseDeadLetterAnswer reads rabbitmqctl's answer, {{ok,MS},[PORTS]}: the
// retry, if the node listens for AMQP on port.
func parseDeadLetterAnswer(out, port string) (time.Duration, string) {
	m := deadLetterAnswer.FindStringSubmatch(strings.TrimSpace(out))
	if m == nil {
		return 0, fmt.Sprintf("rabbitmqctl eval answered %q", out)
	}
	if !slices.Contains(strings.Split(m[2], ","), port) {
		return 0, fmt.Sprintf("the node rabbitmqctl reaches listens for AMQP on [%s], not on port %s", m[2], port)
	}
	ms, err := strconv.Atoi(m[1])
	if err != nil {
		return 0, fmt.Sprintf("rabbitmqctl eval answered %q", out)
	}
	return time.Duration(ms) * time.Millisecond, ""
}

// deadLetterCheckRun is the reason a run with a bounded main queue on the
// shared broker is not judged, or nil: the broker retries a refused dead
// letter only after longer than deadLetterMax. A broker the harness cannot
// ask is judged, and the timeline says so.
func (e *Env) deadLetterCheckRun(ctx context.Context) error {
	if e.Cfg.QueueMaxLength == 0 || e.infra != nil {
		return nil
	}
	retry, why := deadLetterRetry(ctx, e.SB.AMQPURL)
	switch {
	case retry == 0:
		e.Logf("harness", "the main queue is bounded and the broker's %s is unknown (%s): a retry it refuses may come back after the run", deadLetterSetting, why)
		return nil
	case retry > deadLetterMax:
		return fmt.Errorf("the main queue is bounded (queue-max-length %d) and RabbitMQ retries a dead letter it refused only after %s (%s): "+
			"an expired retry would be counted lost before it comes back; at most %s is judged: %s",
			e.Cfg.QueueMaxLength, retry, deadLetterSetting, deadLetterMax, deadLetterFix)
	}
	return nil
}
