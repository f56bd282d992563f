package sms

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
)

// Report is the vendor's record of a refkey, from the result-lookup API.
type Report struct {
	RefKey     string
	Found      bool
	Status     string // "SENT" when the vendor accepted it
	MessageKey string
	Count      int // how many times accepted
}

type reportAnswer struct {
	RefKey     string `json:"refkey"`
	Found      bool   `json:"found"`
	Status     string `json:"status"`
	MessageKey string `json:"messagekey"`
	Count      int    `json:"count"`
}

// Lookup asks the vendor what it did with refkey (SPEC §8 reconciliation).
// A refkey the vendor never accepted gives Found == false and no error.
func (c *Client) Lookup(ctx context.Context, refkey string) (Report, error) {
	token, err := c.getToken(ctx)
	if err != nil {
		return Report{}, fmt.Errorf("vendor lookup %s: %w", refkey, err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.base+"/v3/report?refkey="+url.QueryEscape(refkey), nil)
	if err != nil {
		return Report{}, fmt.Errorf("vendor lookup %s: build request: %w", refkey, err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := c.hc.Do(req)
	if err != nil {
		return Report{}, fmt.Errorf("vendor lookup %s: %w", refkey, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, maxBody))
	if err != nil {
		return Report{}, fmt.Errorf("vendor lookup %s: read answer: %w", refkey, err)
	}
	if resp.StatusCode == http.StatusUnauthorized {
		c.dropToken(token)
	}
	if resp.StatusCode != http.StatusOK {
		return Report{}, fmt.Errorf("vendor lookup %s: HTTP %d: %s", refkey, resp.StatusCode, snippet(raw))
	}
	var a reportAnswer
	if err := json.Unmarshal(raw, &a); err != nil {
		return Report{}, fmt.Errorf("vendor lookup %s: decode answer %q: %w", refkey, snippet(raw), err)
	}
	if a.RefKey != refkey {
		return Report{}, fmt.Errorf("vendor lookup %s: answer is for refkey %q", refkey, a.RefKey)
	}
	return Report{RefKey: a.RefKey, Found: a.Found, Status: a.Status, MessageKey: a.MessageKey, Count: a.Count}, nil
}
