package fakevendor

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"time"
)

// Entry is one message that reached a phone.
type Entry struct {
	Seq         int       `json:"seq"`
	RefKey      string    `json:"refkey"`
	Phone       string    `json:"phone"`
	ContentHash string    `json:"content_hash"` // sha256 hex of Text
	Text        string    `json:"text"`
	At          time.Time `json:"at"`   // when it was recorded, by the vendor's clock (land-late: when it landed)
	Call        int       `json:"call"` // the send call that produced it
}

// Call is one send request the server received, whatever its outcome.
type Call struct {
	N      int    `json:"n"`
	RefKey string `json:"refkey"`
	Mode   Mode   `json:"mode"` // the mode applied; "401" also for a bad or missing token, "bad-request" for a bad body
	// Accepted: the send was recorded in the ledger (for land-late, once it
	// landed).
	Accepted bool      `json:"accepted"`
	At       time.Time `json:"at"` // arrival, by the vendor's clock
	// Expired: its expireat had passed by the vendor's clock when it would
	// have been recorded, so it was not (answered 410, or a land-late
	// request dropped).
	Expired  bool      `json:"expired"`
	Landed   bool      `json:"landed"`    // a land-late request that landed (was recorded)
	LandedAt time.Time `json:"landed_at"` // when it landed, by the vendor's clock
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

// recordLocked puts send call n in the ledger at time at and returns its
// message key.
func (s *Server) recordLocked(b *sendRequest, n int, at time.Time) string {
	seq := len(s.ledger) + 1
	s.ledger = append(s.ledger, Entry{
		Seq:         seq,
		RefKey:      b.RefKey,
		Phone:       b.To,
		ContentHash: Hash(b.Content.AT.Message),
		Text:        b.Content.AT.Message,
		At:          at,
		Call:        n,
	})
	return s.messageKey(seq)
}

// messageKey is the vendor's message key of ledger entry seq.
func (s *Server) messageKey(seq int) string { return fmt.Sprintf("fv-%s-%06d", s.keyBase, seq) }

// Hash returns the ledger's content hash of a message text: sha256, hex.
func Hash(text string) string {
	sum := sha256.Sum256([]byte(text))
	return hex.EncodeToString(sum[:])
}
