package crashpoint

import amqp "github.com/rabbitmq/amqp091-go"

// Acker wraps a delivery's Acknowledger so that each ack, nack and reject
// is a crash point ("amqp:ack", "amqp:nack", "amqp:reject"). Unarmed, it
// returns a unchanged.
func Acker(a amqp.Acknowledger) amqp.Acknowledger {
	if !on.Load() || a == nil {
		return a
	}
	return acker{a}
}

type acker struct{ next amqp.Acknowledger }

func (k acker) Ack(tag uint64, multiple bool) error {
	Reach("amqp:ack", Before)
	err := k.next.Ack(tag, multiple)
	Reach("amqp:ack", After)
	return err
}

func (k acker) Nack(tag uint64, multiple, requeue bool) error {
	Reach("amqp:nack", Before)
	err := k.next.Nack(tag, multiple, requeue)
	Reach("amqp:nack", After)
	return err
}

func (k acker) Reject(tag uint64, requeue bool) error {
	Reach("amqp:reject", Before)
	err := k.next.Reject(tag, requeue)
	Reach("amqp:reject", After)
	return err
}
