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
	RefKey string
	Found  bool // false: the vendor never received it (definitive only once its ExpireAt has passed)
	// Status, when Found: ReportSent (the vendor accepted it: it reached the
	// phone), ReportFailed (the vendor knows it and reports a definite
	// delivery failure, see Reason) or ReportPending (the report is not
	// ready yet: ask again later).
	Status     string
	Reason     string // why, for ReportFailed, e.g. "3101 undeliverable"
	MessageKey string
	Count      int // how many times accepted
}

// The statuses of a Report.
const (
	ReportSent    = "SENT"
	ReportFailed  = "FAILED"
	ReportPending = "PENDING"
)

type reportAnswer struct {
	RefKey     string `json:"refkey"`
	Found      bool   `json:"found"`
	Status     string `json:"status"`
	Reason     string `json:"reason"`
	MessageKey string `json:"messagekey"`
	Count      int    `json:"count"`
}

// Lookup asks the vendor what it did with refkey (design §8 reconciliation).
// A refkey the vendor never received gives Found == false and no error. Any
// answer that is not a report — a non-200, a timeout, a malformed or
// contradictory body (Found with a status other than the three, or not
// Found with one), a report for another refkey — is an error: ask again
// later.
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
	switch {
	case a.Found && a.Status != ReportSent && a.Status != ReportFailed && a.Status != ReportPending:
		return Report{}, fmt.Errorf("vendor lookup %s: found with status %q: want %s, %s or %s", refkey, a.Status, ReportSent, ReportFailed, ReportPending)
	case !a.Found && a.Status != "":
		return Report{}, fmt.Errorf("vendor lookup %s: not found, yet status %q", refkey, a.Status)
	}
	return Report{RefKey: a.RefKey, Found: a.Found, Status: a.Status, Reason: a.Reason, MessageKey: a.MessageKey, Count: a.Count}, nil
}
