package fakevendor

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
)

// Mode is what the fake vendor does with one request.
type Mode string

// The send modes apply to send requests (POST /v3/message); any of them may
// be the default.
const (
	Accept      Mode = "accept"       // record in the ledger, answer 200 code 1000
	AcceptHang  Mode = "accept-hang"  // record, then hang past the client timeout: sent, outcome unknown
	AcceptHold  Mode = "accept-hold"  // record, then hold the answer until the rules are reset; then answer 500: sent, outcome unknown
	Hang        Mode = "hang"         // hang without recording
	Hold        Mode = "hold"         // hold without recording until the rules are reset; then answer 504: not sent, outcome unknown
	Undelivered Mode = "undelivered"  // hang without recording; the report then says FAILED "3101 undeliverable"
	LandLate    Mode = "land-late"    // hold without answering or recording; the request lands later (see the package doc)
	Accept5xx   Mode = "accept-5xx"   // record, then answer 500
	Fail5xx     Mode = "5xx"          // answer 503 without recording
	Status401   Mode = "401"          // answer 401 without recording
	Status403   Mode = "403"          // answer 403 without recording
	Status429   Mode = "429"          // answer 429 without recording
	Reset       Mode = "reset"        // close the connection without answering, without recording
	AcceptReset Mode = "accept-reset" // record, then close the connection without answering
	FailCode    Mode = "fail-code"    // answer HTTP 200 whose body carries failure code 3005, without recording
	LateBody    Mode = "late-body"    // record, send the 200 headers at once and the body only after the client gave up
	Malformed   Mode = "malformed"    // record, then answer 200 with a body that is not JSON
)

// TokenFail applies to token requests (POST /v1/token): the token endpoint
// answers 500.
const TokenFail Mode = "token-fail"

// The report modes apply to report requests (GET /v3/report). Report is the
// truthful answer, what a report request gets when no rule matches.
const (
	Report          Mode = "report"           // the truth, from the ledger and the undelivered requests
	ReportMissing   Mode = "report-missing"   // found=false even if the vendor has it: a late report hiding an accepted message
	ReportPending   Mode = "report-pending"   // found=true, status PENDING: the report is not ready
	ReportWrong     Mode = "report-wrong"     // the opposite of the truth: FAILED for a refkey in the ledger, SENT (count 1) for one that is not
	LookupHang      Mode = "lookup-hang"      // hang until the client gives up, HangTimeout or Close; then 504 if the client is still there
	Lookup5xx       Mode = "lookup-5xx"       // answer 503
	LookupMalformed Mode = "lookup-malformed" // answer 200 with a body that is not JSON
)

// reqKind is the kind of request a mode applies to.
type reqKind int

const (
	sendReq reqKind = iota
	tokenReq
	reportReq
)

func (k reqKind) String() string {
	switch k {
	case tokenReq:
		return "token"
	case reportReq:
		return "report"
	}
	return "send"
}

// modes maps every defined mode to the kind of request it applies to.
var modes = map[Mode]reqKind{
	Accept: sendReq, AcceptHang: sendReq, AcceptHold: sendReq, Hang: sendReq, Hold: sendReq, Undelivered: sendReq, LandLate: sendReq,
	Accept5xx: sendReq, Fail5xx: sendReq, Status401: sendReq, Status403: sendReq, Status429: sendReq,
	Reset: sendReq, AcceptReset: sendReq, FailCode: sendReq, LateBody: sendReq, Malformed: sendReq,

	TokenFail: tokenReq,

	Report: reportReq, ReportMissing: reportReq, ReportPending: reportReq, ReportWrong: reportReq,
	LookupHang: reportReq, Lookup5xx: reportReq, LookupMalformed: reportReq,
}

// Modes returns every defined mode, sorted.
func Modes() []Mode {
	out := make([]Mode, 0, len(modes))
	for m := range modes {
		out = append(out, m)
	}
	slices.Sort(out)
	return out
}

func joinModes(ms []Mode) string {
	ss := make([]string, len(ms))
	for i, m := range ms {
		ss[i] = string(m)
	}
	return strings.Join(ss, ", ")
}

// records reports whether a send handled in mode m reaches the phone on
// arrival (unless its expireat has passed).
func (m Mode) records() bool {
	return m == Accept || m == AcceptHang || m == AcceptHold || m == Accept5xx || m == AcceptReset || m == LateBody || m == Malformed
}

// kind is the kind of request m applies to (sendReq for an unknown mode).
func (m Mode) kind() reqKind { return modes[m] }

// Valid reports whether m is one of the defined modes.
func (m Mode) Valid() bool {
	_, ok := modes[m]
	return ok
}

// ForReports reports whether m applies to report requests (GET /v3/report)
// rather than to sends or token requests.
func (m Mode) ForReports() bool { return m.Valid() && m.kind() == reportReq }

// Rule programs a fault for one kind of request: the kind its Mode applies
// to. A send or report rule matches by RefKey or by Call (the 1-based number
// of the request among that kind's requests: every POST /v3/message, or
// every GET /v3/report, the server received); exactly one of the two is set.
// A TokenFail rule matches token requests: Call, if set, is the 1-based token
// request number, and RefKey must be empty. Times limits how often the rule
// applies (0 = unlimited). The first matching rule wins.
type Rule struct {
	RefKey string `json:"refkey,omitempty"`
	Call   int    `json:"call,omitempty"`
	Mode   Mode   `json:"mode"`
	Times  int    `json:"times,omitempty"`
}

// Validate reports why r cannot be installed, or nil.
func (r Rule) Validate() error {
	if !r.Mode.Valid() {
		return fmt.Errorf("unknown mode %q (one of %s)", r.Mode, joinModes(Modes()))
	}
	if r.Times < 0 {
		return fmt.Errorf("times %d: must be >= 0", r.Times)
	}
	if r.Call < 0 {
		return fmt.Errorf("call %d: must be >= 1 (or 0 for none)", r.Call)
	}
	if r.Mode.kind() == tokenReq {
		if r.RefKey != "" {
			return errors.New("a token-fail rule applies to token requests, which carry no refkey: leave refkey empty (use call for the token request number)")
		}
		return nil
	}
	if r.RefKey == "" && r.Call == 0 {
		return fmt.Errorf("rule for mode %q needs a refkey or a call number (of the %s requests)", r.Mode, r.Mode.kind())
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

// SetDefault sets the mode of a send no rule matches (initially Accept). It
// refuses the token and report modes: token and report requests no rule
// matches always get the truth.
func (s *Server) SetDefault(m Mode) error {
	if !m.Valid() {
		return fmt.Errorf("fakevendor: default: unknown mode %q (one of %s)", m, joinModes(Modes()))
	}
	if k := m.kind(); k != sendReq {
		return fmt.Errorf("fakevendor: default: %q applies to %s requests, not sends; add a %s rule instead", m, k, m)
	}
	s.mu.Lock()
	s.def = m
	s.mu.Unlock()
	s.log.Info("default mode set", "mode", m)
	return nil
}

// ResetRules removes every rule and restores the Accept default. The ledger,
// the call and lookup logs, counters and fired counts are kept, and so are
// the land-late requests still held: removing a fault does not take back a
// request already in flight. The accept-hold and hold requests are
// answered: their hold lasts exactly as long as the fault that made it.
func (s *Server) ResetRules() {
	s.mu.Lock()
	s.rules = nil
	s.def = Accept
	close(s.release)
	s.release = make(chan struct{})
	s.mu.Unlock()
	s.log.Info("rules reset")
}

// Fired returns how many times each mode other than Accept and Report (the
// truthful answers) was applied, whether by a rule or by the default.
func (s *Server) Fired() map[Mode]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return maps.Clone(s.fired)
}

// fireLocked counts one application of m, unless m is a truthful answer.
func (s *Server) fireLocked(m Mode) {
	if m != Accept && m != Report {
		s.fired[m]++
	}
}

// matchLocked returns the mode for request number n of kind k (refkey is
// empty for token requests) and consumes one use of the matching rule.
// Without a matching rule a send gets what the weather says, else the
// default; a token request Accept and a report request Report.
func (s *Server) matchLocked(k reqKind, n int, refkey string) Mode {
	attempt := 0
	if k == sendReq && s.weather != nil {
		s.attempts[refkey]++
		attempt = s.attempts[refkey]
	}
	for _, r := range s.rules {
		if r.Times > 0 && r.used >= r.Times {
			continue
		}
		if r.Mode.kind() != k {
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
	switch k {
	case tokenReq:
		return Accept
	case reportReq:
		return Report
	}
	if s.weather != nil {
		if m := s.weather.Mode(refkey, attempt); m != "" {
			s.weatherAnswers[m]++
			return m
		}
	}
	return s.def
}
