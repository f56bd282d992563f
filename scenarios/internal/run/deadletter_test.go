package run

import (
	"strings"
	"testing"
	"time"

	"github.com/outboxchaos/outboxchaos/rig"
	"github.com/outboxchaos/outboxchaos/system/sandbox"
)

func TestParseDeadLetterAnswer(t *testing.T) {
	for _, c := range []struct {
		out, port string
		want      time.Duration
		why       string
	}{
		{"{{ok,180000},[5672]}\n", "5672", 180 * time.Second, ""},
		{"{{ok,1000},[5671,5672]}", "5672", time.Second, ""},
		{"{{ok,1000},[5673]}", "5672", 0, "not on port 5672"},
		{"{{ok,1000},[]}", "5672", 0, "not on port 5672"},
		{"undefined", "5672", 0, "answered"},
	} {
		got, why := parseDeadLetterAnswer(c.out, c.port)
		if got != c.want || (c.why == "") != (why == "") || !strings.Contains(why, c.why) {
			t.Errorf("parseDeadLetterAnswer(%q, %s) = %v, %q; want %v, %q", c.out, c.port, got, why, c.want, c.why)
		}
	}
}

// TestDeadLetterCheckRun: a bounded main queue on the shared broker is
// not judged when the broker retries a refused dead letter too late, and
// is when it does not, when the queue is unbounded, or on containers.
func TestDeadLetterCheckRun(t *testing.T) {
	late := "amqp://late.invalid/"
	v, _ := deadLetterChecks.LoadOrStore(late, &deadLetterCheck{})
	c := v.(*deadLetterCheck)
	c.once.Do(func() { c.retry = 180 * time.Second })
	soon := "amqp://soon.invalid/"
	v, _ = deadLetterChecks.LoadOrStore(soon, &deadLetterCheck{})
	c = v.(*deadLetterCheck)
	c.once.Do(func() { c.retry = time.Second })

	env := func(url string, maxLen int) *Env {
		e := &Env{TL: rig.NewTimeline(), SB: &sandbox.Sandbox{AMQPURL: url}}
		e.Cfg.QueueMaxLength = maxLen
		return e
	}
	if err := env(late, 1).deadLetterCheckRun(t.Context()); err == nil || !strings.Contains(err.Error(), "3m0s") {
		t.Errorf("bounded queue, 180 s retry: err = %v, want not judged", err)
	}
	if err := env(late, 0).deadLetterCheckRun(t.Context()); err != nil {
		t.Errorf("unbounded queue: err = %v", err)
	}
	if err := env(soon, 1).deadLetterCheckRun(t.Context()); err != nil {
		t.Errorf("bounded queue, 1 s retry: err = %v", err)
	}
}
