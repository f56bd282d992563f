package scenarios

import (
	"github.com/outboxchaos/outboxchaos/checker"
	"github.com/outboxchaos/outboxchaos/faults"
	kp "github.com/outboxchaos/outboxchaos/system/killpoint"
	"github.com/outboxchaos/outboxchaos/system/notification"
)

// defectCatalogue holds the scenarios that found real defects in system/
// (each failed before its fix; the saved failing run is a checker fixture
// under checker/testdata/runs/): configuration at its boundaries and
// outages longer than the limits.
func defectCatalogue() []*Scenario {
	one := []notification.Kind{notification.GradeRenewal}
	return []*Scenario{
		{
			Name: "relay-crash-after-attempt-alert", Row: "§3", Kinds: one,
			Config:      map[string]string{"alert-attempt": "1"},
			Description: "the relay dies right after writing the failed publish that owes the attempts alert (alert-attempt at its minimum, 1)",
			Fault:       "the operator unbinds the main queue (the publish comes back returned); kill-point relay.after-fail (SIGKILL) in relay-1",
			Outcome:     "the attempt that raises RELAY_ATTEMPTS is committed only with its alert out: the alert survives the crash; the row is republished and sent once",
			Steps: []Step{
				start("worker", "cleanup"), startWith("relay", kill(kp.RelayAfterFail)),
				note(await(allOf(podEvent("start", "relay-", 1), podEvent("consume-start", "worker-", 1))),
					"both declared the topology: the unbind is not undone by a pod starting"),
				during(fs(faults.Spec{Kind: "unbind"}), killed("relay-1"), enqueue()),
				start("relay"), await(ledger(1)),
			},
			// No alerts rule: the alert contract alone must catch a
			// missing RELAY_ATTEMPTS alert (canary no-attempts-alert).
			Expect: rules(allOnce, checker.Rule{Rule: "returned-counted"}),
		},
		{
			Name: "delivery-limit-outage", Row: "§5", Kinds: one,
			Config:      map[string]string{"delivery-limit": "1"},
			Description: "the worker's database is down longer than the delivery limit's requeues (delivery-limit at its minimum, 1)",
			Fault:       "the worker's Postgres link is down until the message is parked",
			Outcome:     "the worker parks the message itself at the limit: x-failure-reason DELIVERY_LIMIT and a PARKED alert (lost visibly, never silently)",
			Steps: []Step{
				enqueue(), start("worker", "cleanup"), await(podEvent("consume-start", "worker-", 1)),
				during(fs(linkDown("postgres-worker")), eventOf("park"), start("relay")),
			},
			Expect: rules(lost(1), checker.Rule{Rule: "parked", N: 1}),
		},
		{
			Name: "worker-crash-on-last-delivery", Row: "7", Kinds: one,
			Config:      map[string]string{"delivery-limit": "1"},
			Description: "the worker dies as the last delivery the limit allows arrives, after an outage used up the others",
			Fault:       "the worker's Postgres link is down; kill-point worker.on-delivery, 2nd hit (SIGKILL) in worker-1; a new worker-2 takes over",
			Outcome:     "RabbitMQ never dead-letters on its own first: the next worker parks the message with its reason and a PARKED alert (lost visibly)",
			Steps: []Step{
				enqueue(), startWith("worker", faults.Spec{Kind: "kill-point", Point: kp.WorkerOnDelivery, Hit: 2}), start("cleanup"),
				await(podEvent("consume-start", "worker-", 1)),
				during(fs(linkDown("postgres-worker")), killed("worker-1"), start("relay")),
				start("worker"),
			},
			Expect: rules(lost(1), checker.Rule{Rule: "parked", N: 1}),
		},
	}
}
