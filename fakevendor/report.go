package fakevendor

import (
	"fmt"
	"io"
	"net/http"
	"strconv"
	"time"
)

// Lookup is one report request (GET /v3/report) the server received,
// whatever its answer.
type Lookup struct {
	N      int    `json:"n"`
	RefKey string `json:"refkey"`
	// Mode is the mode applied: Report for a truthful answer, a report mode
	// for a programmed fault, "401" for a bad or missing token and
	// "bad-request" for a request without a refkey.
	Mode Mode `json:"mode"`
	// Found and Status are what the answer said (Status "SENT", "FAILED",
	// "PENDING" or ""): the truth only for Mode Report. An answer that says
	// nothing (lookup-hang, lookup-5xx, lookup-malformed, 401, bad-request)
	// leaves them zero.
	Found  bool      `json:"found"`
	Status string    `json:"status"`
	At     time.Time `json:"at"` // arrival, by the vendor's clock
}

// The report's statuses, and the reason of an undelivered send.
const (
	statusSent          = "SENT"
	statusFailed        = "FAILED"
	statusPending       = "PENDING"
	reasonUndeliverable = "3101 undeliverable"
)

// Lookups returns every report request received, in order.
func (s *Server) Lookups() []Lookup {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Lookup(nil), s.lookups...)
}

type reportResponse struct {
	RefKey     string `json:"refkey"`
	Found      bool   `json:"found"`
	Status     string `json:"status,omitempty"`
	Reason     string `json:"reason,omitempty"`
	MessageKey string `json:"messagekey,omitempty"`
	Count      int    `json:"count"`
}

func (s *Server) handleReport(w http.ResponseWriter, r *http.Request) {
	authOK := s.authorized(r)
	refkey := r.URL.Query().Get("refkey")

	s.mu.Lock()
	n := len(s.lookups) + 1
	lk := Lookup{N: n, RefKey: refkey, At: s.opts.Clock()}
	var resp reportResponse
	var landing []int
	switch {
	case !authOK:
		lk.Mode = Status401 // not a programmed fault: not counted in Fired
	case refkey == "":
		lk.Mode = "bad-request"
	default:
		lk.Mode = s.matchLocked(reportReq, n, refkey)
		s.fireLocked(lk.Mode)
		resp = s.reportLocked(lk.Mode, refkey, n)
		if lk.Mode.answers() {
			lk.Found, lk.Status = resp.Found, resp.Status
		}
		// The land-late requests for refkey land once this lookup is
		// answered: whatever it says, it says it before they land.
		landing = s.heldForLocked(refkey)
	}
	s.lookups = append(s.lookups, lk)
	s.mu.Unlock()
	defer func() {
		for _, c := range landing {
			s.land(c, fmt.Sprintf("report lookup %d answered", n))
		}
	}()

	log := s.log.With("lookup", n, "refkey", refkey, "mode", lk.Mode)
	switch {
	case !authOK:
		log.Info("report refused: bad or missing token")
		writeJSON(w, http.StatusUnauthorized, sendResponse{Code: "3002", Description: "invalid or expired token"})
		return
	case refkey == "":
		log.Info("report refused: no refkey")
		writeJSON(w, http.StatusBadRequest, sendResponse{Code: "2000", Description: "refkey is required"})
		return
	case lk.Mode == Report:
		log.Debug("report answered", "found", resp.Found, "status", resp.Status)
	default:
		log.Info("report fault", "found", lk.Found, "status", lk.Status)
	}

	switch {
	case lk.Mode.answers():
		writeJSON(w, http.StatusOK, resp)
	case lk.Mode == LookupHang:
		if s.wait(w, r, s.opts.HangTimeout, log) {
			writeJSON(w, http.StatusGatewayTimeout, sendResponse{Code: "9998", Description: "timed out"})
		}
	case lk.Mode == Lookup5xx:
		writeJSON(w, http.StatusServiceUnavailable, sendResponse{Code: "9999", Description: "service unavailable"})
	case lk.Mode == LookupMalformed:
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusOK)
		_, _ = io.WriteString(w, `{"refkey":`+strconv.Quote(refkey)+`,"found":tr`) // cut short: not JSON
	default:
		log.Error("unhandled mode")
		writeJSON(w, http.StatusInternalServerError, sendResponse{Code: "9999", Description: "unhandled mode"})
	}
}

// answers reports whether a report request in mode m gets a report (true or
// not) rather than a hang or a broken answer.
func (m Mode) answers() bool {
	return m == Report || m == ReportMissing || m == ReportPending || m == ReportWrong
}

// reportLocked composes the report on refkey that mode m gives, for report
// request n. Modes without a report give the zero value.
func (s *Server) reportLocked(m Mode, refkey string, n int) reportResponse {
	switch m {
	case Report:
		return s.truthLocked(refkey)
	case ReportMissing:
		return reportResponse{RefKey: refkey}
	case ReportPending:
		return reportResponse{RefKey: refkey, Found: true, Status: statusPending}
	case ReportWrong:
		if s.countLocked(refkey) > 0 {
			return reportResponse{RefKey: refkey, Found: true, Status: statusFailed, Reason: reasonUndeliverable}
		}
		// A plausible message key that no ledger entry has.
		return reportResponse{RefKey: refkey, Found: true, Status: statusSent, MessageKey: fmt.Sprintf("fv-%s-w%05d", s.keyBase, n), Count: 1}
	}
	return reportResponse{}
}

// truthLocked is the vendor's true report on refkey: SENT when the ledger
// has it (with the first entry's message key and how many times), FAILED
// when only undelivered sends carried it, not found otherwise. A held
// land-late request is not in the ledger: not found, yet.
func (s *Server) truthLocked(refkey string) reportResponse {
	resp := reportResponse{RefKey: refkey}
	for _, e := range s.ledger {
		if e.RefKey != refkey {
			continue
		}
		if resp.Count == 0 {
			resp.Found, resp.Status = true, statusSent
			resp.MessageKey = s.messageKey(e.Seq)
		}
		resp.Count++
	}
	if resp.Count == 0 && s.failed[refkey] {
		resp.Found, resp.Status, resp.Reason = true, statusFailed, reasonUndeliverable
	}
	return resp
}
