package fakevendor

import (
	"crypto/sha256"
	"encoding/hex"
	"time"
)

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

// Hash returns the ledger's content hash of a message text: sha256, hex.
func Hash(text string) string {
	sum := sha256.Sum256([]byte(text))
	return hex.EncodeToString(sum[:])
}
