package sms

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"
)

// tokenMargin is how long before its expiry a cached token is replaced.
const tokenMargin = 5 * time.Minute

// kst is the zone of the vendor's "expired" timestamps.
var kst = time.FixedZone("KST", 9*60*60)

type tokenAnswer struct {
	AccessToken string `json:"accesstoken"`
	Type        string `json:"type"`
	Expired     string `json:"expired"`
}

// getToken returns the cached token, fetching a new one when there is none
// or it is about to expire.
func (c *Client) getToken(ctx context.Context) (string, error) {
	if tok, ok := c.cachedToken(); ok {
		return tok, nil
	}
	select {
	case c.tokenSem <- struct{}{}:
	case <-ctx.Done():
		return "", fmt.Errorf("wait for token: %w", ctx.Err())
	}
	defer func() { <-c.tokenSem }()
	if tok, ok := c.cachedToken(); ok { // another caller fetched it meanwhile
		return tok, nil
	}
	tok, exp, err := c.fetchToken(ctx)
	if err != nil {
		return "", fmt.Errorf("get token: %w", err)
	}
	c.mu.Lock()
	c.token, c.expires = tok, exp
	c.mu.Unlock()
	return tok, nil
}

func (c *Client) cachedToken() (string, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.token == "" || !time.Now().Add(tokenMargin).Before(c.expires) {
		return "", false
	}
	return c.token, true
}

// dropToken forgets tok if it is still the cached token, so the next call
// fetches a new one.
func (c *Client) dropToken(tok string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.token == tok {
		c.token, c.expires = "", time.Time{}
	}
}

func (c *Client) fetchToken(ctx context.Context) (string, time.Time, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.base+"/v1/token", nil)
	if err != nil {
		return "", time.Time{}, fmt.Errorf("build token request: %w", err)
	}
	req.SetBasicAuth(c.account, c.password)
	resp, err := c.hc.Do(req)
	if err != nil {
		return "", time.Time{}, fmt.Errorf("token request: %w", err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, maxBody))
	if err != nil {
		return "", time.Time{}, fmt.Errorf("read token answer: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		return "", time.Time{}, fmt.Errorf("token request: HTTP %d: %s", resp.StatusCode, snippet(raw))
	}
	var a tokenAnswer
	if err := json.Unmarshal(raw, &a); err != nil {
		return "", time.Time{}, fmt.Errorf("decode token answer %q: %w", snippet(raw), err)
	}
	if a.AccessToken == "" {
		return "", time.Time{}, fmt.Errorf("token answer %q has no accesstoken", snippet(raw))
	}
	if a.Type != "" && !strings.EqualFold(a.Type, "Bearer") {
		return "", time.Time{}, fmt.Errorf("token type %q: want Bearer", a.Type)
	}
	exp, err := time.ParseInLocation("20060102150405", a.Expired, kst)
	if err != nil {
		return "", time.Time{}, fmt.Errorf("token expiry %q: %w", a.Expired, err)
	}
	return a.AccessToken, exp, nil
}
