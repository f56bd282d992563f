package scenarios

import (
	"time"

	"github.com/outboxchaos/outboxchaos/faults"
	"github.com/outboxchaos/outboxchaos/system/notification"
	"github.com/outboxchaos/outboxchaos/world"
)

// outsideKillCases kill the relay under test with SIGKILL from outside, at
// the four moments of its seam, timed by nothing but what the harness sees
// on its links (world.Message counts): a relay that declares no
// kill-points, in any language, is killed where the kill-point cases kill
// ours. A relay's confirms are held back by a latency on what RabbitMQ
// sends it, and its Postgres requests (or their answers) by a stall, so
// each kill lands between two steps the relay cannot take alone; relay-1
// is given a 60 s confirm deadline, so that holding its confirms does not
// time its publishes out instead. Then the faults are taken away and
// relay-2 finishes the batch.
func outsideKillCases(awaitLong func(Cond) Step) []*Scenario {
	holdPublishes := stall("rabbitmq-relay", world.Upstream)
	holdConfirms := latency("rabbitmq-relay", world.Downstream, time.Hour)
	holdStatements := stall("postgres-relay", world.Upstream)
	holdAnswers := stall("postgres-relay", world.Downstream)
	long := faults.Duration(60 * time.Second)
	// waitFor runs steps and waits, from before them, for c.
	waitFor := func(c Cond, steps ...Step) Step {
		return Step{Do: "during", Cond: &c, Timeout: long, Steps: steps}
	}
	confirmed := []Step{
		inject(holdConfirms), enqueue(),
		note(awaitLong(ledger(2)), "a message of the batch reached a handset: published, its confirm held back"),
	}
	outside := func(name, desc, fault, outcome string, held []faults.Spec, steps ...Step) *Scenario {
		all := []Step{
			start("worker", "cleanup"),
			startEnv("relay", "OUTBOXCHAOS_CONFIRM_TIMEOUT=60s"),
			{Do: "enqueue", Kinds: []notification.Kind{notification.GradeRenewal}},
			note(awaitLong(ledger(1)), "relay-1 holds live connections to both"),
		}
		all = append(all, steps...)
		all = append(all,
			inject(faults.Spec{Kind: "kill", Pod: "relay-1"}),
			awaitLong(exitedPod("relay-1")),
			recoverFaults(held...),
			start("relay"), awaitLong(ledger(6)))
		return &Scenario{Name: name, Row: "peer", Description: desc, Fault: fault, Outcome: outcome, Steps: all}
	}
	return []*Scenario{
		outside("peer-kill-after-claim",
			"the relay is killed from outside once it took messages and sent a publish, which never reached RabbitMQ",
			"stall on relay → RabbitMQ, five messages enqueued, SIGKILL relay-1 at its first publish frame on the link; relay-2 started",
			"each delivered once: a row the relay marked done before its publish reached the broker is lost silently",
			[]faults.Spec{holdPublishes},
			inject(holdPublishes),
			note(waitFor(traffic("rabbitmq-relay", world.Publish), enqueue()), "the relay claimed, and its publish is swallowed"),
		),
		outside("peer-kill-after-publish",
			"the relay is killed from outside after its publish reached RabbitMQ, before the confirm reached the relay",
			"latency 1 h on RabbitMQ → relay, five messages enqueued, SIGKILL relay-1 once one of them reached a handset; relay-2 started",
			"each delivered once: relay-2 publishes the unconfirmed rows again and the inbox absorbs the copies",
			[]faults.Spec{holdConfirms},
			confirmed...,
		),
		outside("peer-kill-after-confirm",
			"the relay is killed from outside after the confirms reached it, as its next Postgres statement (the \"done\" write) is sent, before Postgres sees it",
			"latency 1 h on RabbitMQ → relay; once a message reached a handset, stall on relay → Postgres, the latency taken away, SIGKILL relay-1 at its first statement on the link; relay-2 started",
			"each delivered once: the confirmed rows were never marked, relay-2 publishes them again and the inbox absorbs the copies",
			[]faults.Spec{holdStatements},
			append(append([]Step(nil), confirmed...),
				inject(holdStatements),
				note(waitFor(traffic("postgres-relay", world.Statement), recoverFaults(holdConfirms)), "the confirms are let through: the relay's next statement is swallowed"),
			)...,
		),
		outside("peer-kill-after-mark",
			"the relay is killed from outside after its \"done\" write reached Postgres, before the answer reached the relay",
			"latency 1 h on RabbitMQ → relay; once a message reached a handset, stall on Postgres → relay, the latency taken away, SIGKILL relay-1 once its next statement went through; relay-2 started",
			"each delivered once: the write committed or not, relay-2 publishes only what is not marked, and the inbox absorbs any copy",
			[]faults.Spec{holdAnswers},
			append(append([]Step(nil), confirmed...),
				inject(holdAnswers),
				note(waitFor(traffic("postgres-relay", world.Statement), recoverFaults(holdConfirms)), "the confirms are let through: the relay's next statement reaches Postgres, its answer is swallowed"),
			)...,
		),
	}
}
