package fakevendor

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"time"
)

// Options configures a Server.
type Options struct {
	Account  string // the account the token endpoint accepts (Basic auth user)
	Password string // its password
	// HangTimeout is how long the hang modes block (default 30s); they also
	// end when the request's context ends or Close is called.
	HangTimeout time.Duration
	// LandLateMax is how long a land-late request waits for a report lookup
	// of its refkey before it lands anyway (default HangTimeout).
	LandLateMax time.Duration
	Latency     time.Duration // added to every accepted send, for benchmarks
	// LatencyFor, when set, is the delay before the answer of an accepted
	// send of refkey, in place of Latency: a simulator draws it from a
	// distribution, by refkey, so the same seed gives the same delays.
	LatencyFor func(refkey string) time.Duration
	// Clock is the vendor's clock (nil = time.Now). It decides whether a
	// send's expireat has passed, and stamps Entry.At, Call.At,
	// Call.LandedAt and Lookup.At. Token lifetimes and waits run on the wall
	// clock. It is called with the server's lock held: it must not call the
	// Server.
	Clock  func() time.Time
	Logger *slog.Logger // nil discards
}

// maxBody bounds every request body the servers read.
const maxBody = 1 << 20

// Server is the fake vendor. It is safe for concurrent use.
type Server struct {
	opts    Options
	log     *slog.Logger
	keyBase string
	handler http.Handler

	closed    chan struct{}
	closeOnce sync.Once

	mu             sync.Mutex
	rules          []*ruleState
	def            Mode
	tokens         map[string]time.Time
	tokenCalls     int
	calls          []Call
	ledger         []Entry
	fired          map[Mode]int
	lookups        []Lookup
	attempts       map[string]int    // sends per refkey under weather
	weather        *Weather          // SetWeather: the mode of a send no rule matches
	weatherAnswers map[Mode]int      // sends the weather answered, by mode
	held           map[int]*heldSend // land-late requests not yet landed, by call number
	release        chan struct{}     // closed (and replaced) by ResetRules: the accept-hold and hold requests answer
	failed         map[string]bool   // refkeys of undelivered sends: the report says FAILED
	srv            *http.Server
	serveDone      chan struct{}
}

// New returns a server that accepts every send until told otherwise.
func New(opts Options) *Server {
	if opts.HangTimeout <= 0 {
		opts.HangTimeout = 30 * time.Second
	}
	if opts.LandLateMax <= 0 {
		opts.LandLateMax = opts.HangTimeout
	}
	if opts.Clock == nil {
		opts.Clock = time.Now
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
		held:    map[int]*heldSend{},
		release: make(chan struct{}),
		failed:  map[string]bool{},

		attempts:       map[string]int{},
		weatherAnswers: map[Mode]int{},
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
	mux.HandleFunc("GET /admin/lookups", s.handleLookups)
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

// Close releases every hung request, drops every land-late request that has
// not landed (it never will) and, if Start was called, stops serving and
// waits for the server goroutine. It is safe to call more than once.
func (s *Server) Close() error {
	s.closeOnce.Do(func() { close(s.closed) })
	s.dropHeld()
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

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v) // the client may be gone; nothing to do about it
}
