package fakevendor

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"time"
)

// tokenTTL is how long an issued token is valid, as at the real vendor.
const tokenTTL = 24 * time.Hour

// kst is the zone of the vendor's "expired" timestamps.
var kst = time.FixedZone("KST", 9*60*60)

// TokenCalls returns the number of token requests received.
func (s *Server) TokenCalls() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.tokenCalls
}

type tokenResponse struct {
	AccessToken string `json:"accesstoken"`
	Type        string `json:"type"`
	Expired     string `json:"expired"`
}

func (s *Server) handleToken(w http.ResponseWriter, r *http.Request) {
	user, pass, ok := r.BasicAuth()
	s.mu.Lock()
	s.tokenCalls++
	n := s.tokenCalls
	mode := s.matchLocked(tokenReq, n, "")
	s.fireLocked(mode)
	s.mu.Unlock()
	if mode == TokenFail {
		s.log.Info("token fault", "token_call", n, "mode", mode)
		writeJSON(w, http.StatusInternalServerError, map[string]string{"code": "9999", "description": "token service unavailable"})
		return
	}
	if !ok || user != s.opts.Account || pass != s.opts.Password {
		s.log.Info("token refused: bad credentials", "token_call", n, "user", user)
		writeJSON(w, http.StatusUnauthorized, map[string]string{"code": "3001", "description": "invalid account or password"})
		return
	}
	tok := randomHex(16)
	exp := time.Now().Add(tokenTTL)
	s.mu.Lock()
	s.tokens[tok] = exp
	s.mu.Unlock()
	writeJSON(w, http.StatusOK, tokenResponse{AccessToken: tok, Type: "Bearer", Expired: exp.In(kst).Format("20060102150405")})
}

// authorized reports whether r carries a valid, unexpired bearer token.
func (s *Server) authorized(r *http.Request) bool {
	tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !ok || tok == "" {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	exp, ok := s.tokens[tok]
	return ok && time.Now().Before(exp)
}

type sendRequest struct {
	Account string `json:"account"`
	RefKey  string `json:"refkey"`
	Type    string `json:"type"`
	From    string `json:"from"`
	To      string `json:"to"`
	Content struct {
		AT struct {
			SenderKey    string `json:"senderkey"`
			TemplateCode string `json:"templatecode"`
			Message      string `json:"message"`
		} `json:"at"`
	} `json:"content"`
	Resend struct {
		First string `json:"first"`
	} `json:"resend"`
	ResendContent struct {
		SMS struct {
			Message string `json:"message"`
		} `json:"sms"`
	} `json:"resendcontent"`
	ExpireAt string `json:"expireat"` // RFC 3339; empty = no deadline

	expireAt time.Time // ExpireAt parsed by validate
}

// expired reports whether b's acceptance deadline has passed at now.
func (b *sendRequest) expired(now time.Time) bool {
	return !b.expireAt.IsZero() && now.After(b.expireAt)
}

// validate checks b and parses its expireat.
func (b *sendRequest) validate(account string) error {
	if b.ExpireAt != "" {
		t, err := time.Parse(time.RFC3339Nano, b.ExpireAt)
		if err != nil {
			return fmt.Errorf("expireat %q: want RFC 3339: %w", b.ExpireAt, err)
		}
		b.expireAt = t
	}
	switch {
	case b.Account != account:
		return fmt.Errorf("account %q does not match", b.Account)
	case b.RefKey == "":
		return errors.New("refkey is required")
	case b.Type != "at":
		return fmt.Errorf("type %q: only \"at\" is supported", b.Type)
	case b.To == "":
		return errors.New("to is required")
	case b.Content.AT.SenderKey == "":
		return errors.New("content.at.senderkey is required")
	case b.Content.AT.TemplateCode == "":
		return errors.New("content.at.templatecode is required")
	case b.Content.AT.Message == "":
		return errors.New("content.at.message is required")
	}
	return nil
}

type sendResponse struct {
	Code        string `json:"code"`
	Description string `json:"description"`
	RefKey      string `json:"refkey,omitempty"`
	MessageKey  string `json:"messagekey,omitempty"`
}

// expiredAnswer is the answer to a send whose expireat had passed.
var expiredAnswer = sendResponse{Code: "4100", Description: "request expired"}

func (s *Server) handleSend(w http.ResponseWriter, r *http.Request) {
	authOK := s.authorized(r)
	var body sendRequest
	bodyErr := json.NewDecoder(io.LimitReader(r.Body, maxBody)).Decode(&body)
	if bodyErr == nil {
		bodyErr = body.validate(s.opts.Account)
	}

	s.mu.Lock()
	n := len(s.calls) + 1
	call := Call{N: n, RefKey: body.RefKey, At: s.opts.Clock()}
	switch {
	case !authOK:
		call.Mode = Status401 // not a programmed fault: not counted in Fired
	case bodyErr != nil:
		call.Mode = "bad-request"
	default:
		call.Mode = s.matchLocked(sendReq, n, body.RefKey)
		s.fireLocked(call.Mode)
	}
	var key string
	switch {
	case call.Mode.records() && body.expired(call.At):
		call.Expired = true
	case call.Mode.records():
		call.Accepted = true
		key = s.recordLocked(&body, n, call.At)
	case call.Mode == Undelivered:
		s.failed[body.RefKey] = true
	}
	s.calls = append(s.calls, call)
	release := s.release
	if call.Mode == LandLate {
		s.holdLocked(n, body)
	}
	s.mu.Unlock()

	log := s.log.With("call", n, "refkey", body.RefKey, "mode", call.Mode, "accepted", call.Accepted)
	switch {
	case !authOK:
		log.Info("send refused: bad or missing token")
		writeJSON(w, http.StatusUnauthorized, sendResponse{Code: "3002", Description: "invalid or expired token"})
		return
	case bodyErr != nil:
		log.Info("send refused: bad request", "err", bodyErr)
		writeJSON(w, http.StatusBadRequest, sendResponse{Code: "2000", Description: bodyErr.Error()})
		return
	case call.Expired:
		log.Info("send not recorded: its expireat has passed", "expireat", body.ExpireAt, "vendor_clock", call.At)
	case call.Mode == Accept:
		log.Debug("send accepted")
	default:
		log.Info("send fault")
	}

	// The answer of the accepting modes: 200, or 410 for an expired send.
	okStatus, ok := http.StatusOK, sendResponse{Code: "1000", Description: "success", RefKey: body.RefKey, MessageKey: key}
	if call.Expired {
		okStatus, ok = http.StatusGone, expiredAnswer
	}
	latency := s.opts.Latency
	if call.Accepted && s.opts.LatencyFor != nil {
		latency = s.opts.LatencyFor(body.RefKey)
	}
	if call.Accepted && latency > 0 && !s.wait(w, r, latency, log) {
		return
	}
	// An expired send is answered 410 at once, except where its mode still
	// hangs (accept-hang waits, then answers 410) or resets (accept-reset).
	if call.Expired && call.Mode != AcceptHang && call.Mode != AcceptReset {
		writeJSON(w, okStatus, ok)
		return
	}
	switch call.Mode {
	case Accept:
		writeJSON(w, okStatus, ok)
	case AcceptHang:
		if s.wait(w, r, s.opts.HangTimeout, log) {
			writeJSON(w, okStatus, ok)
		}
	case AcceptHold:
		if s.hold(w, r, release, log) {
			writeJSON(w, http.StatusInternalServerError, sendResponse{Code: "9999", Description: "internal error"})
		}
	case Hold:
		// The answer a gateway gives when the vendor behind it stalled:
		// the client cannot tell whether the vendor acted on it.
		if s.hold(w, r, release, log) {
			writeJSON(w, http.StatusGatewayTimeout, sendResponse{Code: "9998", Description: "timed out"})
		}
	case Hang, Undelivered, LandLate:
		if s.wait(w, r, s.opts.HangTimeout, log) {
			writeJSON(w, http.StatusGatewayTimeout, sendResponse{Code: "9998", Description: "timed out"})
		}
	case Accept5xx:
		writeJSON(w, http.StatusInternalServerError, sendResponse{Code: "9999", Description: "internal error"})
	case Fail5xx:
		writeJSON(w, http.StatusServiceUnavailable, sendResponse{Code: "9999", Description: "service unavailable"})
	case Status401:
		writeJSON(w, http.StatusUnauthorized, sendResponse{Code: "3002", Description: "invalid or expired token"})
	case Status403:
		writeJSON(w, http.StatusForbidden, sendResponse{Code: "3003", Description: "forbidden"})
	case Status429:
		writeJSON(w, http.StatusTooManyRequests, sendResponse{Code: "3004", Description: "too many requests"})
	case Reset, AcceptReset:
		s.abort(w, log)
	case FailCode:
		writeJSON(w, http.StatusOK, sendResponse{Code: "3005", Description: "invalid recipient", RefKey: body.RefKey})
	case Malformed:
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"code":"1000","refkey":`))
	case LateBody:
		// The status line and headers now, the body after the client's
		// timeout: the answer arrives just too late.
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusOK)
		_ = http.NewResponseController(w).Flush()
		if s.wait(w, r, s.opts.HangTimeout, log) {
			_ = json.NewEncoder(w).Encode(ok)
		}
	default:
		log.Error("unhandled mode")
		writeJSON(w, http.StatusInternalServerError, sendResponse{Code: "9999", Description: "unhandled mode"})
	}
}

// wait blocks for d, or until the request's context ends (the client gave
// up) or the server is closed; it reports whether the whole d elapsed. When
// Close cut the wait short it closes the connection without an answer, so a
// released request never looks like a 200.
func (s *Server) wait(w http.ResponseWriter, r *http.Request, d time.Duration, log *slog.Logger) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	return until(s, w, r, t.C, log)
}

// until blocks until done fires, or the request's context ends (the client
// gave up) or the server is closed; it reports whether done fired.
func until[T any](s *Server, w http.ResponseWriter, r *http.Request, done <-chan T, log *slog.Logger) bool {
	select {
	case <-done:
		return true
	case <-r.Context().Done():
		return false
	case <-s.closed:
		log.Info("request released by Close")
		s.abort(w, log)
		return false
	}
}

// hold blocks until release is closed (the rules were reset), or the
// request's context ends (the client gave up) or the server is closed; it
// reports whether the release came. No timer ends it: a harness holds a
// call for as long as it needs, whatever the machine's speed.
func (s *Server) hold(w http.ResponseWriter, r *http.Request, release <-chan struct{}, log *slog.Logger) bool {
	log.Info("send held until the rules are reset")
	released := until(s, w, r, release, log)
	if released {
		log.Info("held send released")
	}
	return released
}

// abort closes the connection without answering, with a TCP reset when it
// can.
func (s *Server) abort(w http.ResponseWriter, log *slog.Logger) {
	conn, _, err := http.NewResponseController(w).Hijack()
	if err != nil {
		log.Error("hijack failed; answering 500 instead", "err", err)
		writeJSON(w, http.StatusInternalServerError, sendResponse{Code: "9999", Description: "reset unavailable"})
		return
	}
	if tc, ok := conn.(*net.TCPConn); ok {
		_ = tc.SetLinger(0) // close with RST, like a dropped connection
	}
	if err := conn.Close(); err != nil {
		log.Debug("close hijacked connection", "err", err)
	}
}
