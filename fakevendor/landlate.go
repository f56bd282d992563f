package fakevendor

import "time"

// heldSend is a land-late request that has not landed yet. It lands — is
// recorded, unless its expireat has passed by then — right after the vendor
// answers the first report lookup for its refkey, or when its timer fires
// (LandLateMax after it arrived), whichever comes first. The request's own
// handler plays no part: the caller may be long gone when it lands.
type heldSend struct {
	req   sendRequest
	timer *time.Timer
}

// holdLocked holds send call n (mode land-late) until it lands. After Close
// nothing is held: a request arriving then is dropped at once.
func (s *Server) holdLocked(n int, req sendRequest) {
	select {
	case <-s.closed:
		s.log.Info("land-late request dropped: the server is closed", "call", n, "refkey", req.RefKey)
		return
	default:
	}
	h := &heldSend{req: req}
	h.timer = time.AfterFunc(s.opts.LandLateMax, func() { s.land(n, "no lookup came within LandLateMax") })
	s.held[n] = h
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
	h.timer.Stop()
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
		h.timer.Stop()
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
