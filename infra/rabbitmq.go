package infra

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"
	tcexec "github.com/testcontainers/testcontainers-go/exec"
)

// brokerEnv is one RabbitMQ node's environment: its own node name, AMQP
// and distribution ports on 127.0.0.1, the epmd it registers with, the
// cluster's cookie, no plugins (nothing else listens), logs on stdout. The
// node proposes a 600 s heartbeat instead of 60 s: a client's shorter one
// still wins the negotiation, but a scenario can give one pod a heartbeat
// that outlasts its run (scenarios/catalogue/infra.go's longHeartbeat), which the
// default would cap at 60 s, so three missed ones drop it inside the run.
// A dead letter its target refused is retried after 1 s, not 180 s, as on
// the shared broker (scenarios/internal/run/deadletter.go).
func brokerEnv(erlang string, amqpPort, distPort, epmdPort int, cookie string) map[string]string {
	return map[string]string{
		"RABBITMQ_NODENAME":                   erlang,
		"RABBITMQ_NODE_IP_ADDRESS":            "127.0.0.1",
		"RABBITMQ_NODE_PORT":                  strconv.Itoa(amqpPort),
		"RABBITMQ_DIST_PORT":                  strconv.Itoa(distPort),
		"ERL_EPMD_PORT":                       strconv.Itoa(epmdPort),
		"ERL_EPMD_ADDRESS":                    "127.0.0.1",
		"RABBITMQ_LOGS":                       "-",
		"RABBITMQ_ENABLED_PLUGINS_FILE":       "/var/lib/rabbitmq/outboxchaos-no-plugins",
		"RABBITMQ_SERVER_ADDITIONAL_ERL_ARGS": "-kernel inet_dist_use_interface {127,0,0,1} -rabbit heartbeat 600 -rabbit dead_letter_worker_publisher_confirm_timeout 1000 -setcookie " + cookie,
		"RABBITMQ_CTL_ERL_ARGS":               "-setcookie " + cookie,
	}
}

// startRabbit runs one RabbitMQ node with its own private epmd (inside its
// container: it dies and returns with the node).
func (in *Containers) startRabbit(ctx context.Context) error {
	ports, err := freePorts(3)
	if err != nil {
		return err
	}
	erlang := "rabbit-" + in.tag + "@localhost"
	_, err = in.startBroker(ctx, "rabbitmq", erlang, brokerEnv(erlang, ports[0], ports[1], ports[2], "oc"+in.tag))
	return err
}

// startCluster runs a shared epmd, then n nodes: the first alone, the
// others joining it. The epmd has a container of its own, so it outlives
// any node the faults kill.
func (in *Containers) startCluster(ctx context.Context, n int) error {
	ports, err := freePorts(1 + 2*n)
	if err != nil {
		return err
	}
	epmdPort, cookie := ports[0], "oc"+in.tag
	if in.epmd, err = in.run(ctx, "epmd", RabbitMQImage(),
		[]string{"epmd", "-port", strconv.Itoa(epmdPort), "-address", "127.0.0.1"}, nil); err != nil {
		return err
	}
	// The nodes boot at once; each then joins the first, one at a time.
	nodes := make([]*Node, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			erlang := fmt.Sprintf("rabbit-%s-%d@localhost", in.tag, i+1)
			env := brokerEnv(erlang, ports[2*i+1], ports[2*i+2], epmdPort, cookie)
			nodes[i], errs[i] = in.startBroker(ctx, fmt.Sprintf("rabbitmq-%d", i+1), erlang, env)
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return err
	}
	for _, node := range nodes[1:] {
		t0 := time.Now()
		for _, args := range [][]string{{"stop_app"}, {"join_cluster", nodes[0].Erlang}, {"start_app"}} {
			if _, err := in.ctl(ctx, node, args...); err != nil {
				return fmt.Errorf("join %s to %s: %w", node.Name, nodes[0].Name, err)
			}
		}
		if err := in.waitReady(ctx, node); err != nil {
			return err
		}
		node.Started += time.Since(t0)
		in.o.Log.Info("node joined the cluster", "node", node.Name, "took", time.Since(t0).Round(time.Millisecond).String())
	}
	return nil
}

// startBroker starts one node's container and waits until it serves AMQP.
func (in *Containers) startBroker(ctx context.Context, name, erlang string, env map[string]string) (*Node, error) {
	t0 := time.Now()
	ctr, err := in.run(ctx, name, RabbitMQImage(), []string{"rabbitmq-server"}, env)
	if err != nil {
		return nil, err
	}
	url := "amqp://guest:guest@127.0.0.1:" + env["RABBITMQ_NODE_PORT"] + "/"
	n := &Node{Name: name, URL: url, Erlang: erlang, ctr: ctr, isBroker: true,
		ready: func(ctx context.Context) error { return amqpReady(url) }}
	in.add(n)
	if err := in.waitReady(ctx, n); err != nil {
		return nil, err
	}
	n.Started = time.Since(t0)
	in.o.Log.Info("rabbitmq node up", "node", name, "erlang", erlang, "url", "127.0.0.1:"+env["RABBITMQ_NODE_PORT"],
		"took", n.Started.Round(time.Millisecond).String())
	return n, nil
}

// amqpReady opens a connection and a channel: the node serves AMQP.
func amqpReady(url string) error {
	conn, err := amqp.DialConfig(url, amqp.Config{Dial: amqp.DefaultDial(2 * time.Second)})
	if err != nil {
		return fmt.Errorf("dial: %w", err)
	}
	defer conn.Close()
	ch, err := conn.Channel()
	if err != nil {
		return fmt.Errorf("open a channel: %w", err)
	}
	return ch.Close()
}

// ctl runs rabbitmqctl against node inside its container and returns its
// output; a non-zero exit is an error carrying the output.
func (in *Containers) ctl(ctx context.Context, node *Node, args ...string) (string, error) {
	cmd := append([]string{"rabbitmqctl", "-q", "-n", node.Erlang}, args...)
	code, r, err := node.ctr.Exec(ctx, cmd, tcexec.Multiplexed())
	if err != nil {
		return "", fmt.Errorf("exec %s in %s: %w", strings.Join(cmd, " "), node.Name, err)
	}
	out, _ := io.ReadAll(r)
	if code != 0 {
		return string(out), fmt.Errorf("%s in %s exited %d: %s", strings.Join(cmd, " "), node.Name, code, strings.TrimSpace(string(out)))
	}
	return string(out), nil
}

// QueueLeader names the node leading the quorum queue called queue, asking
// the first node that runs.
func (in *Containers) QueueLeader(ctx context.Context, queue string) (string, error) {
	var errs []error
	for _, name := range in.Nodes() {
		n, _ := in.Node(name)
		if !n.isBroker {
			continue
		}
		if up, err := in.Running(ctx, name); err != nil || !up {
			continue
		}
		out, err := in.ctl(ctx, n, "list_queues", "name", "leader", "--formatter", "json")
		if err != nil {
			errs = append(errs, err)
			continue
		}
		var qs []struct{ Name, Leader string }
		if err := json.Unmarshal([]byte(jsonPart(out)), &qs); err != nil {
			errs = append(errs, fmt.Errorf("read list_queues of %s: %w: %q", name, err, out))
			continue
		}
		for _, q := range qs {
			if q.Name != queue {
				continue
			}
			for _, m := range in.nodes {
				if m.Erlang == q.Leader {
					return m.Name, nil
				}
			}
			return "", fmt.Errorf("queue %s: leader %q is no node of this cluster", queue, q.Leader)
		}
		return "", fmt.Errorf("no queue %s on %s", queue, name)
	}
	return "", fmt.Errorf("no running node could name the leader of %s: %w", queue, errors.Join(errs...))
}

// jsonPart drops anything rabbitmqctl printed before its JSON.
func jsonPart(s string) string {
	if i := strings.Index(s, "["); i >= 0 {
		return s[i:]
	}
	return s
}
