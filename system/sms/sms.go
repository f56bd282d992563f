// Package sms owns the SMS vendor client (design §5, modelled on BizPpurio's
// v3 API): the access-token cache, the alimtalk send call with its SMS
// fallback, the result lookup by refkey used for reconciliation (design §8),
// and — most importantly — the classification of every send into one of three
// outcome classes: Sent, NotSent (definitely did not go out, safe to retry)
// and Unknown (may have reached the phone, must never be retried).
//
// The vendor's send API has no idempotency key, so the client never retries
// anything itself, never reuses a connection, and reports NotSent only when
// it knows nothing reached the vendor or the vendor refused the request.
// A send may carry an acceptance deadline (Request.ExpireAt): a vendor whose
// clock has passed it refuses the send (NotSent, CodeExpiredAtVendor) and
// can never deliver it, which is what makes a later "never received" report
// definitive.
//
// Files: sms.go holds the client, Send and its classification, token.go the
// access-token cache, lookup.go the result lookup.
package sms

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/outboxchaos/outboxchaos/system/canary"
	"github.com/outboxchaos/outboxchaos/system/crashpoint"
)

// Outcome is the class of a send's result (design §5).
type Outcome int

// The outcome classes.
const (
	Sent    Outcome = iota // vendor accepted (HTTP 200 and code 1000)
	NotSent                // definitely not sent: token failure, connection refused (dial failure), HTTP 401/403/410/429
	Unknown                // indefinite: timeout, 5xx, reset after the request was written, any other status, bad response body
)

// String returns "SENT", "NOT_SENT" or "UNKNOWN".
func (o Outcome) String() string {
	switch o {
	case Sent:
		return "SENT"
	case NotSent:
		return "NOT_SENT"
	case Unknown:
		return "UNKNOWN"
	}
	return fmt.Sprintf("Outcome(%d)", int(o))
}

// Result codes the client sets itself (the vendor's own codes, such as
// "1000", are passed through).
const (
	CodeSuccess           = "1000"                // the vendor's success code
	CodeCancelled         = "CANCELLED"           // NotSent: the caller's context ended before anything was sent
	CodeTokenFailed       = "TOKEN_FAILED"        // NotSent: no access token could be obtained
	CodeConnRefused       = "CONN_REFUSED"        // NotSent: the connection never opened (dial failure)
	CodeConnectTimeout    = "CONNECT_TIMEOUT"     // NotSent: the time ran out before a connection opened
	CodeConnectFailed     = "CONNECT_FAILED"      // NotSent: any other failure before a connection opened
	CodeTimeout           = "TIMEOUT"             // Unknown: the request was in flight when the time ran out
	CodeCancelledInFlight = "CANCELLED_IN_FLIGHT" // Unknown: the caller cancelled while the request was in flight
	CodeConnReset         = "CONN_RESET"          // Unknown: the connection broke after it opened
	CodeTransport         = "TRANSPORT_ERROR"     // Unknown: any other error after the connection opened
	CodeBadBody           = "BAD_BODY"            // Unknown: a 200 whose body could not be read or understood
	CodeExpiredAtVendor   = "EXPIRED_AT_VENDOR"   // NotSent: the vendor refused the send because its ExpireAt had passed (HTTP 410 / code 4100)
)

// codeExpired is the vendor's code for a send refused because its
// expireat had passed.
const codeExpired = "4100"

// Request is one alimtalk message with its SMS fallback.
type Request struct {
	RefKey       string // = message_id, the reconciliation key
	Phone        string // recipient
	From         string // sender number
	TemplateCode string
	Text         string // alimtalk body
	Fallback     string // SMS fallback text
	// ExpireAt is the acceptance deadline (zero = none): a vendor whose
	// clock has passed it refuses the send (HTTP 410) and can never deliver
	// it, so after that moment a report saying "never received" is
	// definitive.
	ExpireAt time.Time
}

// Result is the classified result of one Send.
type Result struct {
	Outcome    Outcome
	Status     int    // HTTP status of the send call, 0 if none
	Code       string // vendor result code, e.g. "1000", or a short reason like "TOKEN_FAILED", "CONN_REFUSED", "TIMEOUT", "HTTP_503", "HTTP_401"
	MessageKey string // vendor message key on success
	Err        error  // the underlying error, nil on Sent
}

// SenderKey is the Kakao sender profile key sent with every alimtalk.
const SenderKey = "outboxchaos"

// maxBody bounds every answer body the client reads.
const maxBody = 1 << 20

// Client talks to the vendor. It is safe for concurrent use.
type Client struct {
	base     string
	account  string
	password string
	hc       *http.Client

	// rateLimitUnknown classes HTTP 429 as Unknown instead of NotSent (the
	// RateLimitAsUnknown canary, chosen in New).
	rateLimitUnknown bool

	tokenSem chan struct{} // one token fetch at a time; waiting honours ctx
	mu       sync.Mutex
	token    string
	expires  time.Time
}

// DefaultTimeout is the per-call timeout New uses when given none.
const DefaultTimeout = 10 * time.Second

// New returns a client for the vendor at baseURL. timeout bounds each HTTP
// call (token, send, lookup) from dial to the end of the answer body; a
// non-positive timeout means DefaultTimeout, never "no limit".
func New(baseURL, account, password string, timeout time.Duration) *Client {
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	tr := &http.Transport{
		Proxy:                  nil, // talk to the vendor directly
		DialContext:            (&net.Dialer{Timeout: timeout, KeepAlive: 30 * time.Second}).DialContext,
		DisableKeepAlives:      true, // a fresh connection per call: never send on a stale or broken one
		MaxResponseHeaderBytes: 64 << 10,
		ForceAttemptHTTP2:      false,
	}
	return &Client{
		base:     strings.TrimRight(baseURL, "/"),
		account:  account,
		password: password,
		// Never follow a redirect: following one would send the request again.
		hc: &http.Client{
			Transport: crashpoint.Transport("vendor", tr), // each call is a crash point
			Timeout:   timeout,
			CheckRedirect: func(*http.Request, []*http.Request) error {
				return http.ErrUseLastResponse
			},
		},
		tokenSem:         make(chan struct{}, 1),
		rateLimitUnknown: canary.On(canary.RateLimitAsUnknown),
	}
}

type sendBody struct {
	Account       string            `json:"account"`
	RefKey        string            `json:"refkey"`
	Type          string            `json:"type"`
	From          string            `json:"from"`
	To            string            `json:"to"`
	Content       sendContent       `json:"content"`
	Resend        sendResend        `json:"resend"`
	ResendContent sendResendContent `json:"resendcontent"`
	ExpireAt      string            `json:"expireat,omitempty"` // RFC 3339 with nanoseconds, UTC
}

type sendContent struct {
	AT struct {
		SenderKey    string `json:"senderkey"`
		TemplateCode string `json:"templatecode"`
		Message      string `json:"message"`
	} `json:"at"`
}

type sendResend struct {
	First string `json:"first"`
}

type sendResendContent struct {
	SMS struct {
		Message string `json:"message"`
	} `json:"sms"`
}

type sendAnswer struct {
	Code        string `json:"code"`
	Description string `json:"description"`
	RefKey      string `json:"refkey"`
	MessageKey  string `json:"messagekey"`
}

// Send sends one alimtalk (with SMS fallback) and classifies the result. It
// makes at most one send call and never retries: the caller decides, from
// the Outcome, whether a retry is safe (only after NotSent).
func (c *Client) Send(ctx context.Context, req Request) Result {
	if err := ctx.Err(); err != nil {
		return Result{Outcome: NotSent, Code: CodeCancelled, Err: fmt.Errorf("vendor send %s: not attempted: %w", req.RefKey, err)}
	}
	token, err := c.getToken(ctx)
	if err != nil {
		code := CodeTokenFailed
		if ctx.Err() != nil {
			code = CodeCancelled
		}
		return Result{Outcome: NotSent, Code: code, Err: fmt.Errorf("vendor send %s: %w", req.RefKey, err)}
	}

	body := sendBody{Account: c.account, RefKey: req.RefKey, Type: "at", From: req.From, To: req.Phone}
	body.Content.AT.SenderKey = SenderKey
	body.Content.AT.TemplateCode = req.TemplateCode
	body.Content.AT.Message = req.Text
	body.Resend.First = "sms"
	body.ResendContent.SMS.Message = req.Fallback
	if !req.ExpireAt.IsZero() {
		body.ExpireAt = req.ExpireAt.UTC().Format(time.RFC3339Nano)
	}
	raw, err := json.Marshal(body)
	if err != nil { // cannot happen with string fields; nothing was sent
		return Result{Outcome: NotSent, Code: "ENCODE_FAILED", Err: fmt.Errorf("vendor send %s: encode: %w", req.RefKey, err)}
	}

	// connected records whether a connection to the vendor ever opened. Until
	// it does, no byte of the request can have left this process.
	var connected atomic.Bool
	trace := &httptrace.ClientTrace{GotConn: func(httptrace.GotConnInfo) { connected.Store(true) }}
	hreq, err := http.NewRequestWithContext(httptrace.WithClientTrace(ctx, trace), http.MethodPost, c.base+"/v3/message", bytes.NewReader(raw))
	if err != nil {
		return Result{Outcome: NotSent, Code: "BAD_REQUEST", Err: fmt.Errorf("vendor send %s: build request: %w", req.RefKey, err)}
	}
	hreq.GetBody = nil // the body can never be replayed
	hreq.Header.Set("Content-Type", "application/json; charset=utf-8")
	hreq.Header.Set("Authorization", "Bearer "+token)

	resp, err := c.hc.Do(hreq)
	if err != nil {
		return classifyTransportError(ctx, req.RefKey, connected.Load(), err)
	}
	defer resp.Body.Close()
	answer, readErr := io.ReadAll(io.LimitReader(resp.Body, maxBody))

	res := Result{Status: resp.StatusCode}
	switch {
	case resp.StatusCode == http.StatusOK:
		if readErr != nil {
			res.Outcome, res.Code = Unknown, CodeBadBody
			if isTimeout(readErr) {
				res.Code = CodeTimeout
			}
			res.Err = fmt.Errorf("vendor send %s: read answer: %w", req.RefKey, readErr)
			return res
		}
		var a sendAnswer
		if err := json.Unmarshal(answer, &a); err != nil {
			res.Outcome, res.Code = Unknown, CodeBadBody
			res.Err = fmt.Errorf("vendor send %s: decode answer %q: %w", req.RefKey, snippet(answer), err)
			return res
		}
		switch {
		case a.Code == codeExpired:
			res.Outcome, res.Code = NotSent, CodeExpiredAtVendor
			res.Err = fmt.Errorf("vendor send %s: HTTP 200 with code %s: %s", req.RefKey, a.Code, a.Description)
		case a.Code != CodeSuccess:
			res.Outcome, res.Code = Unknown, a.Code
			if res.Code == "" {
				res.Code = CodeBadBody
			}
			res.Err = fmt.Errorf("vendor send %s: HTTP 200 with code %q: %s", req.RefKey, a.Code, a.Description)
		case a.RefKey != "" && a.RefKey != req.RefKey:
			res.Outcome, res.Code = Unknown, CodeBadBody
			res.Err = fmt.Errorf("vendor send %s: answer is for refkey %q", req.RefKey, a.RefKey)
		default:
			res.Outcome, res.Code, res.MessageKey = Sent, a.Code, a.MessageKey
		}
		return res
	case resp.StatusCode == http.StatusUnauthorized:
		c.dropToken(token)
		res.Outcome = NotSent
	case resp.StatusCode == http.StatusGone: // the vendor's clock passed ExpireAt: it can never send it
		res.Outcome, res.Code = NotSent, CodeExpiredAtVendor
		res.Err = fmt.Errorf("vendor send %s: HTTP 410 (expired at the vendor): %s", req.RefKey, snippet(answer))
		return res
	case resp.StatusCode == http.StatusTooManyRequests && c.rateLimitUnknown:
		res.Outcome = Unknown
	case resp.StatusCode == http.StatusForbidden, resp.StatusCode == http.StatusTooManyRequests:
		res.Outcome = NotSent
	default: // 5xx and every other status: the vendor may have acted on it
		res.Outcome = Unknown
	}
	res.Code = fmt.Sprintf("HTTP_%d", resp.StatusCode)
	res.Err = fmt.Errorf("vendor send %s: HTTP %d: %s", req.RefKey, resp.StatusCode, snippet(answer))
	return res
}

// classifyTransportError classifies an error from the send call that came
// before any answer. Only an error before a connection opened is NotSent.
func classifyTransportError(ctx context.Context, refkey string, connected bool, err error) Result {
	res := Result{Err: fmt.Errorf("vendor send %s: %w", refkey, err)}
	if !connected {
		// Nothing left this process: definitely not sent.
		res.Outcome = NotSent
		switch {
		case errors.Is(ctx.Err(), context.Canceled):
			res.Code = CodeCancelled
		case errors.Is(err, syscall.ECONNREFUSED):
			res.Code = CodeConnRefused
		case isTimeout(err):
			res.Code = CodeConnectTimeout
		case isDialError(err):
			res.Code = CodeConnRefused
		default:
			res.Code = CodeConnectFailed
		}
		return res
	}
	res.Outcome = Unknown
	switch {
	case isTimeout(err):
		res.Code = CodeTimeout
	case errors.Is(ctx.Err(), context.Canceled):
		res.Code = CodeCancelledInFlight
	case errors.Is(err, syscall.ECONNRESET), errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		res.Code = CodeConnReset
	default:
		res.Code = CodeTransport
	}
	return res
}

// isTimeout reports whether err is a timeout: the client's own timeout, a
// context deadline, or a network timeout.
func isTimeout(err error) bool {
	if errors.Is(err, context.DeadlineExceeded) {
		return true
	}
	var te interface{ Timeout() bool }
	return errors.As(err, &te) && te.Timeout()
}

// isDialError reports whether err says the connection never opened.
func isDialError(err error) bool {
	var op *net.OpError
	return errors.Is(err, syscall.ECONNREFUSED) || (errors.As(err, &op) && op.Op == "dial")
}

func snippet(b []byte) string {
	s := strings.TrimSpace(string(b))
	if len(s) > 200 {
		s = s[:200] + "…"
	}
	return s
}
