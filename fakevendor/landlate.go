package fakevendor

import "time"

// heldSend is a land-late request that has not landed yet. It lands — is
// recorded, unless its expireat has passed by then — right after the vendor
// answers the first report lookup for its refkey, or once the vendor's
// clock reads LandLateMax past its arrival, whichever comes first. The
// request's own handler plays no part: the caller may be long gone when it
// lands. The landing follows the vendor's clock (Options.Clock), not the
// wall clock, so a harness that jumps the clock moves it too.
type heldSend struct {
	req  sendRequest
	due  time.Time     // on the vendor's clock
	stop chan struct{} // closed when it lands or is dropped
}

// landEvery is how often a held request's watcher reads the vendor's
// clock.
const landEvery = 5 * time.Millisecond

// holdLocked holds send call n (mode land-late) until it lands. After Close
// nothing is held: a request arriving then is dropped at once.
func (s *Server) holdLocked(n int, req sendRequest) {
	select {
	case <-s.closed:
		s.log.Info("land-late request dropped: the server is closed", "call", n, "refkey", req.RefKey)
		return
	default:
	}
	h := &heldSend{req: req, due: s.opts.Clock().Add(s.opts.LandLateMax), stop: make(chan struct{})}
	s.held[n] = h
	go func() {
		t := time.NewTicker(landEvery)
		defer t.Stop()
		for {
			select {
			case <-h.stop:
				return
			case <-t.C:
				if !s.opts.Clock().Before(h.due) {
					s.land(n, "no lookup came within LandLateMax")
					return
				}
			}
		}
	}()
}

// NextLanding returns when, on the vendor's clock, the first held
// request lands if no lookup comes first (false: none is held).
func (s *Server) NextLanding() (time.Time, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var next time.Time
	for _, h := range s.held {
		if next.IsZero() || h.due.Before(next) {
			next = h.due
		}
	}
	return next, !next.IsZero()
}

// heldForLocked returns the call numbers of the held requests for refkey.
func (s *Server) heldForLocked(refkey string) []int {
	var out []int
	for n, h := range s.held {
		if h.req.RefKey == refkey {
			out = append(out, n)
		}
	}
	return out
}

// land lands held send call n: it records it in the ledger at the vendor
// clock's now, or drops it if its expireat has passed by then. A request
// that already landed, or that Close dropped, is left alone. why says what
// made it land, for the log.
func (s *Server) land(n int, why string) {
	s.mu.Lock()
	h, ok := s.held[n]
	if !ok {
		s.mu.Unlock()
		return
	}
	delete(s.held, n)
	close(h.stop)
	now := s.opts.Clock()
	c := &s.calls[n-1]
	if h.req.expired(now) {
		c.Expired = true
		s.mu.Unlock()
		s.log.Info("land-late request dropped: its expireat passed before it landed",
			"call", n, "refkey", h.req.RefKey, "expireat", h.req.ExpireAt, "vendor_clock", now, "why", why)
		return
	}
	s.recordLocked(&h.req, n, now)
	c.Accepted, c.Landed, c.LandedAt = true, true, now
	s.mu.Unlock()
	s.log.Info("land-late request landed", "call", n, "refkey", h.req.RefKey, "why", why)
}

// dropHeld drops every held request without recording it (Close).
func (s *Server) dropHeld() {
	s.mu.Lock()
	dropped := len(s.held)
	for n, h := range s.held {
		close(h.stop)
		delete(s.held, n)
	}
	s.mu.Unlock()
	if dropped > 0 {
		s.log.Info("land-late requests dropped by Close", "dropped", dropped)
	}
}

// Held returns how many land-late requests are held, not yet landed or
// dropped.
func (s *Server) Held() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.held)
}
