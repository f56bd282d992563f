// Package fakevendor owns the stand-in for the SMS vendor (SPEC §5): an HTTP
// server speaking the same token / send / report API as the real vendor
// client in system/sms, with programmable faults, and the handset ledger —
// the ground truth of what reached a customer's phone, recorded even when the
// caller gave up waiting. It also owns AlertSink, the Slack-compatible webhook
// receiver that collects the pipeline's operations alerts.
//
// Other processes steer a running server through its JSON admin endpoints
// (see AdminClient); tests in the same process call the Server methods.
package fakevendor

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"
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

// Entry is one message that reached a phone.
type Entry struct {
	Seq         int       `json:"seq"`
	RefKey      string    `json:"refkey"`
	Phone       string    `json:"phone"`
	ContentHash string    `json:"content_hash"` // sha256 hex of Text
	Text        string    `json:"text"`
	At          time.Time `json:"at"`
	Call        int       `json:"call"` // the send call that produced it
}

// Call is one send request the server received, whatever its outcome.
type Call struct {
	N        int       `json:"n"`
	RefKey   string    `json:"refkey"`
	Mode     Mode      `json:"mode"` // the mode applied; "401" also for a bad or missing token
	Accepted bool      `json:"accepted"`
	At       time.Time `json:"at"`
}

// Options configures a Server.
type Options struct {
	Account  string // the account the token endpoint accepts (Basic auth user)
	Password string // its password
	// HangTimeout is how long the hang modes block (default 30s); they also
	// end when the request's context ends or Close is called.
	HangTimeout time.Duration
	Latency     time.Duration // added to every accepted send, for benchmarks
	Logger      *slog.Logger  // nil discards
}

// tokenTTL is how long an issued token is valid, as at the real vendor.
const tokenTTL = 24 * time.Hour

// kst is the zone of the vendor's "expired" timestamps.
var kst = time.FixedZone("KST", 9*60*60)

// maxBody bounds every request body the servers read.
const maxBody = 1 << 20

type ruleState struct {
	Rule
	used int
}

// Server is the fake vendor. It is safe for concurrent use.
type Server struct {
	opts    Options
	log     *slog.Logger
	keyBase string
	handler http.Handler

	closed    chan struct{}
	closeOnce sync.Once

	mu         sync.Mutex
	rules      []*ruleState
	def        Mode
	tokens     map[string]time.Time
	tokenCalls int
	calls      []Call
	ledger     []Entry
	fired      map[Mode]int
	srv        *http.Server
	serveDone  chan struct{}
}

// New returns a server that accepts every send until told otherwise.
func New(opts Options) *Server {
	if opts.HangTimeout <= 0 {
		opts.HangTimeout = 30 * time.Second
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	s := &Server{
		opts:    opts,
		log:     log.With("component", "fakevendor"),
		keyBase: randomHex(4),
		closed:  make(chan struct{}),
		def:     Accept,
		tokens:  map[string]time.Time{},
		fired:   map[Mode]int{},
	}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/token", s.handleToken)
	mux.HandleFunc("POST /v3/message", s.handleSend)
	mux.HandleFunc("GET /v3/report", s.handleReport)
	mux.HandleFunc("POST /admin/rules", s.handleAddRule)
	mux.HandleFunc("DELETE /admin/rules", s.handleResetRules)
	mux.HandleFunc("PUT /admin/default", s.handleSetDefault)
	mux.HandleFunc("GET /admin/ledger", s.handleLedger)
	mux.HandleFunc("GET /admin/ledger/count", s.handleCount)
	mux.HandleFunc("GET /admin/calls", s.handleCalls)
	mux.HandleFunc("GET /admin/fired", s.handleFired)
	s.handler = mux
	return s
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b) // crypto/rand.Read never fails (Go 1.24+).
	return hex.EncodeToString(b)
}

// Handler returns the handler serving every endpoint (vendor API and admin).
func (s *Server) Handler() http.Handler { return s.handler }

// Start listens on addr (a loopback address such as "127.0.0.1:0"), serves
// in the background and returns the base URL, e.g. "http://127.0.0.1:PORT".
func (s *Server) Start(addr string) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.srv != nil {
		return "", errors.New("fakevendor: already started")
	}
	ln, err := listenLoopback(addr)
	if err != nil {
		return "", fmt.Errorf("fakevendor: %w", err)
	}
	s.srv = &http.Server{Handler: s.handler, ReadHeaderTimeout: 10 * time.Second}
	s.serveDone = make(chan struct{})
	go func(srv *http.Server, done chan struct{}) {
		defer close(done)
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			s.log.Error("serve", "err", err)
		}
	}(s.srv, s.serveDone)
	url := "http://" + ln.Addr().String()
	s.log.Info("listening", "url", url)
	return url, nil
}

// listenLoopback listens on addr, refusing anything but a loopback address.
func listenLoopback(addr string) (net.Listener, error) {
	if addr == "" {
		addr = "127.0.0.1:0"
	}
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, fmt.Errorf("listen address %q: %w", addr, err)
	}
	if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		return nil, fmt.Errorf("listen address %q: only loopback addresses are allowed", addr)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("listen %s: %w", addr, err)
	}
	return ln, nil
}

// Close releases every hung request and, if Start was called, stops serving
// and waits for the server goroutine. It is safe to call more than once.
func (s *Server) Close() error {
	s.closeOnce.Do(func() { close(s.closed) })
	s.mu.Lock()
	srv, done := s.srv, s.serveDone
	s.mu.Unlock()
	if srv == nil {
		return nil
	}
	err := srv.Close()
	<-done
	if err != nil {
		return fmt.Errorf("fakevendor: close: %w", err)
	}
	return nil
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

// Ledger returns every message that reached a phone, in order.
func (s *Server) Ledger() []Entry {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Entry(nil), s.ledger...)
}

// Count returns how many times refkey reached a phone.
func (s *Server) Count(refkey string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.countLocked(refkey)
}

func (s *Server) countLocked(refkey string) int {
	n := 0
	for _, e := range s.ledger {
		if e.RefKey == refkey {
			n++
		}
	}
	return n
}

// Calls returns the number of send requests received, whatever their outcome.
func (s *Server) Calls() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.calls)
}

// CallLog returns every send request received, in order.
func (s *Server) CallLog() []Call {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Call(nil), s.calls...)
}

// TokenCalls returns the number of token requests received.
func (s *Server) TokenCalls() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.tokenCalls
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

// --- vendor API ---

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
	mode := s.matchLocked(true, n, "")
	if mode == TokenFail {
		s.fired[TokenFail]++
	}
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
}

func (b *sendRequest) validate(account string) error {
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

func (s *Server) handleSend(w http.ResponseWriter, r *http.Request) {
	authOK := s.authorized(r)
	var body sendRequest
	bodyErr := json.NewDecoder(io.LimitReader(r.Body, maxBody)).Decode(&body)
	if bodyErr == nil {
		bodyErr = body.validate(s.opts.Account)
	}

	s.mu.Lock()
	n := len(s.calls) + 1
	call := Call{N: n, RefKey: body.RefKey, At: time.Now()}
	switch {
	case !authOK:
		call.Mode = Status401 // not a programmed fault: not counted in Fired
	case bodyErr != nil:
		call.Mode = "bad-request"
	default:
		call.Mode = s.matchLocked(false, n, body.RefKey)
		if call.Mode != Accept {
			s.fired[call.Mode]++
		}
	}
	var key string
	if call.Mode.records() {
		call.Accepted = true
		key = fmt.Sprintf("fv-%s-%06d", s.keyBase, len(s.ledger)+1)
		s.ledger = append(s.ledger, Entry{
			Seq:         len(s.ledger) + 1,
			RefKey:      body.RefKey,
			Phone:       body.To,
			ContentHash: Hash(body.Content.AT.Message),
			Text:        body.Content.AT.Message,
			At:          call.At,
			Call:        n,
		})
	}
	s.calls = append(s.calls, call)
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
	case call.Mode == Accept:
		log.Debug("send accepted")
	default:
		log.Info("send fault")
	}

	ok := sendResponse{Code: "1000", Description: "success", RefKey: body.RefKey, MessageKey: key}
	if call.Mode.records() && s.opts.Latency > 0 && !s.wait(w, r, s.opts.Latency, log) {
		return
	}
	switch call.Mode {
	case Accept:
		writeJSON(w, http.StatusOK, ok)
	case AcceptHang:
		if s.wait(w, r, s.opts.HangTimeout, log) {
			writeJSON(w, http.StatusOK, ok)
		}
	case Hang:
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
	select {
	case <-t.C:
		return true
	case <-r.Context().Done():
		return false
	case <-s.closed:
		log.Info("request released by Close")
		s.abort(w, log)
		return false
	}
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

type reportResponse struct {
	RefKey     string `json:"refkey"`
	Found      bool   `json:"found"`
	Status     string `json:"status,omitempty"`
	MessageKey string `json:"messagekey,omitempty"`
	Count      int    `json:"count"`
}

func (s *Server) handleReport(w http.ResponseWriter, r *http.Request) {
	if !s.authorized(r) {
		writeJSON(w, http.StatusUnauthorized, sendResponse{Code: "3002", Description: "invalid or expired token"})
		return
	}
	refkey := r.URL.Query().Get("refkey")
	if refkey == "" {
		writeJSON(w, http.StatusBadRequest, sendResponse{Code: "2000", Description: "refkey is required"})
		return
	}
	resp := reportResponse{RefKey: refkey}
	s.mu.Lock()
	for _, e := range s.ledger {
		if e.RefKey != refkey {
			continue
		}
		if resp.Count == 0 {
			resp.Found, resp.Status = true, "SENT"
			resp.MessageKey = fmt.Sprintf("fv-%s-%06d", s.keyBase, e.Seq)
		}
		resp.Count++
	}
	s.mu.Unlock()
	writeJSON(w, http.StatusOK, resp)
}

// Hash returns the ledger's content hash of a message text: sha256, hex.
func Hash(text string) string {
	sum := sha256.Sum256([]byte(text))
	return hex.EncodeToString(sum[:])
}

// --- admin API ---

type errorBody struct {
	Error string `json:"error"`
}

type modeBody struct {
	Mode Mode `json:"mode"`
}

type countBody struct {
	RefKey string `json:"refkey"`
	Count  int    `json:"count"`
}

func (s *Server) handleAddRule(w http.ResponseWriter, r *http.Request) {
	var rule Rule
	if err := decodeStrict(r, &rule); err != nil {
		writeJSON(w, http.StatusBadRequest, errorBody{Error: fmt.Sprintf("rule body: %v", err)})
		return
	}
	if err := s.AddRule(rule); err != nil {
		writeJSON(w, http.StatusBadRequest, errorBody{Error: err.Error()})
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func (s *Server) handleResetRules(w http.ResponseWriter, _ *http.Request) {
	s.ResetRules()
	w.WriteHeader(http.StatusNoContent)
}

func (s *Server) handleSetDefault(w http.ResponseWriter, r *http.Request) {
	var b modeBody
	if err := decodeStrict(r, &b); err != nil {
		writeJSON(w, http.StatusBadRequest, errorBody{Error: fmt.Sprintf("default body: %v", err)})
		return
	}
	if err := s.SetDefault(b.Mode); err != nil {
		writeJSON(w, http.StatusBadRequest, errorBody{Error: err.Error()})
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func (s *Server) handleLedger(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, orEmpty(s.Ledger()))
}

func (s *Server) handleCount(w http.ResponseWriter, r *http.Request) {
	refkey := r.URL.Query().Get("refkey")
	if refkey == "" {
		writeJSON(w, http.StatusBadRequest, errorBody{Error: "refkey query parameter is required"})
		return
	}
	writeJSON(w, http.StatusOK, countBody{RefKey: refkey, Count: s.Count(refkey)})
}

func (s *Server) handleCalls(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, orEmpty(s.CallLog()))
}

func (s *Server) handleFired(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, s.Fired())
}

// orEmpty makes an empty list encode as [] rather than null.
func orEmpty[T any](v []T) []T {
	if v == nil {
		return []T{}
	}
	return v
}

// decodeStrict decodes one JSON value from r's body into v, rejecting
// unknown fields so a misspelt rule is not silently a different rule.
func decodeStrict(r *http.Request, v any) error {
	dec := json.NewDecoder(io.LimitReader(r.Body, maxBody))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("decode JSON: %w", err)
	}
	return nil
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v) // the client may be gone; nothing to do about it
}
