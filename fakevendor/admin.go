package fakevendor

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// AdminClient steers and reads a fake vendor running in another process
// through its /admin endpoints.
type AdminClient struct {
	base string
	hc   *http.Client
}

// NewAdminClient returns a client for the fake vendor at baseURL (the URL
// Start returned). It owns its transport: on http.DefaultTransport anything
// else in the process that closes idle connections (httptest.Server.Close
// does) can break an admin call that was reusing one.
func NewAdminClient(baseURL string) *AdminClient {
	return &AdminClient{
		base: strings.TrimRight(baseURL, "/"),
		hc: &http.Client{
			Transport: &http.Transport{MaxIdleConnsPerHost: 4, IdleConnTimeout: 30 * time.Second},
			Timeout:   10 * time.Second,
		},
	}
}

// AddRule installs a fault rule.
func (a *AdminClient) AddRule(ctx context.Context, r Rule) error {
	if err := a.do(ctx, http.MethodPost, "/admin/rules", r, nil); err != nil {
		return fmt.Errorf("add rule %+v: %w", r, err)
	}
	return nil
}

// ResetRules removes every rule and restores the Accept default.
func (a *AdminClient) ResetRules(ctx context.Context) error {
	if err := a.do(ctx, http.MethodDelete, "/admin/rules", nil, nil); err != nil {
		return fmt.Errorf("reset rules: %w", err)
	}
	return nil
}

// SetDefault sets the mode applied when no rule matches.
func (a *AdminClient) SetDefault(ctx context.Context, m Mode) error {
	if err := a.do(ctx, http.MethodPut, "/admin/default", modeBody{Mode: m}, nil); err != nil {
		return fmt.Errorf("set default mode %q: %w", m, err)
	}
	return nil
}

// Ledger returns every message that reached a phone.
func (a *AdminClient) Ledger(ctx context.Context) ([]Entry, error) {
	var out []Entry
	if err := a.do(ctx, http.MethodGet, "/admin/ledger", nil, &out); err != nil {
		return nil, fmt.Errorf("read ledger: %w", err)
	}
	return out, nil
}

// Count returns how many times refkey reached a phone.
func (a *AdminClient) Count(ctx context.Context, refkey string) (int, error) {
	var out countBody
	if err := a.do(ctx, http.MethodGet, "/admin/ledger/count?refkey="+url.QueryEscape(refkey), nil, &out); err != nil {
		return 0, fmt.Errorf("count %q: %w", refkey, err)
	}
	return out.Count, nil
}

// Calls returns every send request the fake vendor received.
func (a *AdminClient) Calls(ctx context.Context) ([]Call, error) {
	var out []Call
	if err := a.do(ctx, http.MethodGet, "/admin/calls", nil, &out); err != nil {
		return nil, fmt.Errorf("read calls: %w", err)
	}
	return out, nil
}

// Lookups returns every report request the fake vendor received.
func (a *AdminClient) Lookups(ctx context.Context) ([]Lookup, error) {
	var out []Lookup
	if err := a.do(ctx, http.MethodGet, "/admin/lookups", nil, &out); err != nil {
		return nil, fmt.Errorf("read lookups: %w", err)
	}
	return out, nil
}

// Fired returns how many times each fault mode was applied.
func (a *AdminClient) Fired(ctx context.Context) (map[Mode]int, error) {
	out := map[Mode]int{}
	if err := a.do(ctx, http.MethodGet, "/admin/fired", nil, &out); err != nil {
		return nil, fmt.Errorf("read fired: %w", err)
	}
	return out, nil
}

// do sends in (if not nil) as JSON and decodes a 2xx answer into out (if not
// nil). A non-2xx answer is an error carrying the server's message.
func (a *AdminClient) do(ctx context.Context, method, path string, in, out any) error {
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return fmt.Errorf("encode request: %w", err)
		}
		body = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, a.base+path, body)
	if err != nil {
		return fmt.Errorf("build request: %w", err)
	}
	if in != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := a.hc.Do(req)
	if err != nil {
		return fmt.Errorf("%s %s: %w", method, path, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return fmt.Errorf("%s %s: read answer: %w", method, path, err)
	}
	if resp.StatusCode/100 != 2 {
		var eb errorBody
		if json.Unmarshal(raw, &eb) == nil && eb.Error != "" {
			return fmt.Errorf("%s %s: HTTP %d: %s", method, path, resp.StatusCode, eb.Error)
		}
		return fmt.Errorf("%s %s: HTTP %d: %s", method, path, resp.StatusCode, bytes.TrimSpace(raw))
	}
	if out == nil {
		return nil
	}
	if err := json.Unmarshal(raw, out); err != nil {
		return fmt.Errorf("%s %s: decode answer: %w", method, path, err)
	}
	return nil
}

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

func (s *Server) handleLookups(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, orEmpty(s.Lookups()))
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
