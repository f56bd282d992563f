package seam

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/jackc/pgx/v5"

	"github.com/outboxchaos/outboxchaos/history"
	"github.com/outboxchaos/outboxchaos/system/app"
	"github.com/outboxchaos/outboxchaos/system/broker"
	"github.com/outboxchaos/outboxchaos/system/config"
	"github.com/outboxchaos/outboxchaos/system/jobs"
	"github.com/outboxchaos/outboxchaos/system/killpoint"
	"github.com/outboxchaos/outboxchaos/system/notification"
)

// Env is what an adapter gets from the pod: the configuration (URLs,
// prefix, instance, confirm timeout), the logger and our exchange.
type Env struct {
	Cfg      config.Config
	Log      *slog.Logger
	Exchange string
}

// Main is a peer binary's command line, shared by every adapter:
//
//	migrate                      our schema, our topology, then the peer's tables
//	enqueue --per-kind N --kinds K  the batch jobs, enqueuing into the peer's outbox in the same transaction
//	relay                        the peer's relay until SIGTERM
//	consume                      the peer's own consumer until SIGTERM (a Consumer; worker pods run it instead of our worker)
//	settings                     every setting the adapter chose, one per line
//	backfill --from A --to B     enqueue notification_outbox rows A..B into the peer's outbox (the benchmark's backlog, bench/peerbench)
//
// The benchmark drives a peer binary from outside (bench/peerbench), so no
// peer binary links the benchmark code.
//
// Configuration comes from the OUTBOXCHAOS_* environment as for
// outboxchaos itself. It returns the process exit code.
func Main(pick func(impl string) (Adapter, error), args []string, stdout, stderr io.Writer) int {
	if err := run(pick, args, stdout, stderr); err != nil {
		fmt.Fprintln(stderr, "error:", err)
		var u usage
		if errors.As(err, &u) {
			return 2
		}
		return 1
	}
	return 0
}

type usage struct{ error }

func run(pick func(string) (Adapter, error), args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		return usage{errors.New("usage: <migrate|enqueue|relay|consume|settings|backfill> [--impl NAME] [flags]")}
	}
	if err := killpoint.ArmFromEnv(); err != nil {
		return usage{fmt.Errorf("arm kill-points: %w", err)}
	}
	cmd := args[0]
	cfg := config.Default()
	if err := cfg.FromEnv(); err != nil {
		return usage{err}
	}
	fs := flag.NewFlagSet(cmd, flag.ContinueOnError)
	fs.SetOutput(stderr)
	cfg.Bind(fs)
	impl := fs.String("impl", os.Getenv("OUTBOXCHAOS_PEER_IMPL"), "the implementation under test")
	perKind := fs.Int("per-kind", 1, "enqueue: notifications of each kind")
	kindList := fs.String("kinds", "all", "enqueue: comma-separated notification kinds")
	seed := fs.Bool("seed", true, "enqueue: seed the business rows first (the harness seeds them itself and passes false)")
	from := fs.Int64("from", 1, "backfill: first outbox id")
	to := fs.Int64("to", 0, "backfill: last outbox id")
	if err := fs.Parse(args[1:]); err != nil {
		return usage{err}
	}
	if err := cfg.Validate(); err != nil {
		return usage{err}
	}
	a, err := pick(*impl)
	if err != nil {
		return usage{err}
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	parts, err := app.NewParts(cfg, stderr)
	if err != nil {
		return usage{err}
	}
	defer parts.Alerts.Close()
	env := Env{Cfg: cfg, Log: parts.Log.With("component", "peer-relay", "impl", a.Name()), Exchange: broker.NamesFor(cfg.Prefix).Exchange}
	switch cmd {
	case "backfill":
		pool, err := app.OpenPool(ctx, cfg)
		if err != nil {
			return err
		}
		defer pool.Close()
		n, err := Backfill(ctx, pool, a, env, *from, *to)
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "backfilled: %d\n", n)
		return nil
	case "settings":
		for _, s := range a.Settings() {
			fmt.Fprintf(stdout, "%s=%s\t%s\n", s.Name, s.Value, s.Why)
		}
		return nil
	case "migrate":
		if err := app.Migrate(ctx, cfg); err != nil {
			return err
		}
		if err := app.DeclareTopology(cfg); err != nil {
			return err
		}
		return a.Migrate(ctx, env)
	case "enqueue":
		kinds, err := kindsOf(*kindList)
		if err != nil {
			return usage{err}
		}
		pool, err := app.OpenPool(ctx, cfg)
		if err != nil {
			return err
		}
		defer pool.Close()
		if *seed {
			if err := jobs.Seed(ctx, pool, parts.Clock.Now(), *perKind, kinds); err != nil {
				return err
			}
		}
		r := jobs.NewRunner(pool, parts.Clock, parts.Alerts, parts.Log)
		r.AlsoEnqueue = func(ctx context.Context, tx pgx.Tx, keys []string) error {
			msgs, err := Messages(ctx, tx, keys)
			if err != nil {
				return err
			}
			if err := a.Enqueue(ctx, env, tx, msgs); err != nil {
				return err
			}
			for _, m := range msgs {
				env.Log.Info("enqueued into the peer's outbox", history.KeyEvent, history.PeerEnqueue, history.KeyMessageID, m.MessageID)
			}
			return nil
		}
		st, err := r.Run(ctx, kinds)
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "enqueued: %d inserted, %d already present, %d lost (alerted)\n", st.Inserted, st.Existing, st.Lost)
		return nil
	case "consume":
		c, ok := a.(Consumer)
		if !ok {
			return usage{fmt.Errorf("%s has no consumer of its own: our worker consumes for it", a.Name())}
		}
		env.Log = parts.Log.With("component", "peer-consumer", "impl", a.Name())
		env.Log.Info("peer consumer starting", history.KeyEvent, history.Start)
		err := c.Consume(ctx, env)
		if ctx.Err() != nil {
			return nil
		}
		return err
	case "relay":
		env.Log.Info("peer relay starting", history.KeyEvent, history.Start)
		err := a.Relay(ctx, env)
		if ctx.Err() != nil {
			return nil
		}
		return err
	}
	return usage{fmt.Errorf("unknown command %q", cmd)}
}

func kindsOf(s string) ([]notification.Kind, error) {
	if s == "" || s == "all" {
		return nil, nil
	}
	var out []notification.Kind
	for _, part := range strings.Split(s, ",") {
		k := notification.Kind(strings.ToUpper(strings.TrimSpace(part)))
		if !k.Known() {
			return nil, fmt.Errorf("unknown notification kind %q", part)
		}
		out = append(out, k)
	}
	return out, nil
}
