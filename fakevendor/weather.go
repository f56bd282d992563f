package fakevendor

import (
	"fmt"
	"hash/fnv"
	"maps"
	"math/rand/v2"
	"strconv"
)

// Weather is the vendor's weather over a run: each send no rule matches,
// independently, times out, fails with a 5xx or is throttled (429) with
// the given shares, and half of the timeouts and of the 5xx reached the
// phone first. Which send meets what is drawn from Seed, the message's
// refkey and the attempt (1 for its first send), so one seed gives the
// same weather whatever order the sends arrive in.
type Weather struct {
	Timeout  float64 `json:"timeout"`
	Fail5xx  float64 `json:"5xx"`
	Throttle float64 `json:"429"`
	Seed     int64   `json:"seed"`
}

// Validate checks that every share is in [0, 1] and that they add up to
// at most 1.
func (w Weather) Validate() error {
	for _, s := range []struct {
		name string
		v    float64
	}{{"timeout", w.Timeout}, {"5xx", w.Fail5xx}, {"429", w.Throttle}} {
		if s.v < 0 || s.v > 1 {
			return fmt.Errorf("weather: %s share %g must be in [0, 1]", s.name, s.v)
		}
	}
	if w.Timeout+w.Fail5xx+w.Throttle > 1 {
		return fmt.Errorf("weather: the shares add up to %g, more than 1", w.Timeout+w.Fail5xx+w.Throttle)
	}
	return nil
}

// Mode is the weather's answer to the attempt'th send of refkey: a hang
// (AcceptHang when the phone got it), a 5xx (Accept5xx likewise), a 429,
// or "" (the server's default).
func (w Weather) Mode(refkey string, attempt int) Mode {
	a := strconv.Itoa(attempt)
	u := w.unit("vendor", refkey, a)
	half := w.unit("half", refkey, a) < 0.5
	switch {
	case u < w.Timeout:
		if half {
			return AcceptHang
		}
		return Hang
	case u < w.Timeout+w.Fail5xx:
		if half {
			return Accept5xx
		}
		return Fail5xx
	case u < w.Timeout+w.Fail5xx+w.Throttle:
		return Status429
	}
	return ""
}

// unit is a uniform number in [0, 1) fixed by the seed and the keys.
func (w Weather) unit(keys ...string) float64 {
	h := fnv.New64a()
	for _, k := range keys {
		_, _ = h.Write([]byte(k))
		_, _ = h.Write([]byte{0})
	}
	return rand.New(rand.NewPCG(uint64(w.Seed), h.Sum64())).Float64()
}

// SetWeather makes the server answer every send that no rule matches by w
// from now on; nil ends the weather (the default answers again). The
// attempts of a refkey are counted from the first send under weather.
func (s *Server) SetWeather(w *Weather) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if w == nil {
		s.weather = nil
		s.log.Info("weather ended")
		return
	}
	c := *w
	s.weather = &c
	s.log.Info("weather set", "timeout", c.Timeout, "5xx", c.Fail5xx, "429", c.Throttle, "seed", c.Seed)
}

// WeatherAnswers returns how many sends the weather answered with each
// mode other than the default, since the server started.
func (s *Server) WeatherAnswers() map[Mode]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return maps.Clone(s.weatherAnswers)
}
