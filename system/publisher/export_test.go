package publisher

import "time"

// WaitConfirms blocks until every publish of pd that went out has its
// answer: an ack, a nack, or its channel's end. Tests use it as the barrier
// that the broker's answers to a window have all been read, returns first.
func (pd *Pending) WaitConfirms() {
	for _, dc := range pd.dcs {
		if dc != nil {
			<-dc.Done()
		}
	}
}

// SetConfirmTimeout sets the confirm timeout of the windows sent from now
// on, so a test can send one window whose deadline has passed beside
// another that waits.
func (p *Publisher) SetConfirmTimeout(d time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.timeout = d
}
