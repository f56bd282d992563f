package fakevendor

import (
	"errors"
	"fmt"
)

// Mode is what the fake vendor does with one request.
type Mode string

// The modes. Every mode except TokenFail applies to send calls
// (POST /v3/message); TokenFail applies to token calls (POST /v1/token).
const (
	Accept      Mode = "accept"       // record in the ledger, answer 200 code 1000
	AcceptHang  Mode = "accept-hang"  // record, then hang past the client timeout: sent, outcome unknown
	Hang        Mode = "hang"         // hang without recording
	Accept5xx   Mode = "accept-5xx"   // record, then answer 500
	Fail5xx     Mode = "5xx"          // answer 503 without recording
	Status401   Mode = "401"          // answer 401 without recording
	Status403   Mode = "403"          // answer 403 without recording
	Status429   Mode = "429"          // answer 429 without recording
	TokenFail   Mode = "token-fail"   // the token endpoint answers 500
	Reset       Mode = "reset"        // close the connection without answering, without recording
	AcceptReset Mode = "accept-reset" // record, then close the connection without answering
)

var modes = map[Mode]bool{
	Accept: true, AcceptHang: true, Hang: true, Accept5xx: true, Fail5xx: true,
	Status401: true, Status403: true, Status429: true, TokenFail: true,
	Reset: true, AcceptReset: true,
}

// records reports whether a send handled in mode m reaches the phone.
func (m Mode) records() bool {
	return m == Accept || m == AcceptHang || m == Accept5xx || m == AcceptReset
}

// Valid reports whether m is one of the defined modes.
func (m Mode) Valid() bool { return modes[m] }

// Rule programs a fault. A send rule matches by RefKey or by Call (the 1-based
// number of the send request, counting every POST /v3/message the server
// received); exactly one of the two is set. A TokenFail rule applies to token
// requests instead: Call, if set, is the 1-based token request number, and
// RefKey must be empty. Times limits how often the rule applies (0 =
// unlimited). The first matching rule wins.
type Rule struct {
	RefKey string `json:"refkey,omitempty"`
	Call   int    `json:"call,omitempty"`
	Mode   Mode   `json:"mode"`
	Times  int    `json:"times,omitempty"`
}

// Validate reports why r cannot be installed, or nil.
func (r Rule) Validate() error {
	if !r.Mode.Valid() {
		return fmt.Errorf("unknown mode %q", r.Mode)
	}
	if r.Times < 0 {
		return fmt.Errorf("times %d: must be >= 0", r.Times)
	}
	if r.Call < 0 {
		return fmt.Errorf("call %d: must be >= 1 (or 0 for none)", r.Call)
	}
	if r.Mode == TokenFail {
		if r.RefKey != "" {
			return errors.New("a token-fail rule applies to token requests, which carry no refkey: leave refkey empty (use call for the token request number)")
		}
		return nil
	}
	if r.RefKey == "" && r.Call == 0 {
		return fmt.Errorf("rule for mode %q needs a refkey or a call number", r.Mode)
	}
	if r.RefKey != "" && r.Call != 0 {
		return errors.New("set refkey or call, not both")
	}
	return nil
}

type ruleState struct {
	Rule
	used int
}

// AddRule appends a rule after validating it.
func (s *Server) AddRule(r Rule) error {
	if err := r.Validate(); err != nil {
		return fmt.Errorf("fakevendor: rule: %w", err)
	}
	s.mu.Lock()
	s.rules = append(s.rules, &ruleState{Rule: r})
	s.mu.Unlock()
	s.log.Info("rule added", "refkey", r.RefKey, "call", r.Call, "mode", r.Mode, "times", r.Times)
	return nil
}

// SetDefault sets the mode of a send no rule matches (initially Accept).
func (s *Server) SetDefault(m Mode) error {
	if !m.Valid() {
		return fmt.Errorf("fakevendor: default: unknown mode %q", m)
	}
	if m == TokenFail {
		return fmt.Errorf("fakevendor: default: %q applies to token requests; add a token-fail rule instead", m)
	}
	s.mu.Lock()
	s.def = m
	s.mu.Unlock()
	s.log.Info("default mode set", "mode", m)
	return nil
}

// ResetRules removes every rule and restores the Accept default. The ledger,
// call log, counters and fired counts are kept.
func (s *Server) ResetRules() {
	s.mu.Lock()
	s.rules = nil
	s.def = Accept
	s.mu.Unlock()
	s.log.Info("rules reset")
}

// Fired returns how many times each mode other than Accept was applied,
// whether by a rule or by the default.
func (s *Server) Fired() map[Mode]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[Mode]int, len(s.fired))
	for m, n := range s.fired {
		out[m] = n
	}
	return out
}

// matchLocked returns the mode for a send (token == false) or token request
// and consumes one use of the matching rule. n is the request number.
func (s *Server) matchLocked(token bool, n int, refkey string) Mode {
	for _, r := range s.rules {
		if r.Times > 0 && r.used >= r.Times {
			continue
		}
		if token != (r.Mode == TokenFail) {
			continue
		}
		switch {
		case r.Call != 0 && r.Call != n:
			continue
		case r.RefKey != "" && r.RefKey != refkey:
			continue
		}
		r.used++
		return r.Mode
	}
	if token {
		return Accept
	}
	return s.def
}
