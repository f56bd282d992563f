package crashpoint

import (
	"net/http"
	"strings"
)

// Transport wraps rt so that each HTTP call is a crash point named
// "http:<peer>-<last path segment>" ("http:vendor-message",
// "http:vendor-token", "http:vendor-report"), or "http:<peer>" for a root
// path: before the request leaves, after its answer's headers arrived.
func Transport(peer string, rt http.RoundTripper) http.RoundTripper {
	return transport{peer: peer, next: rt}
}

type transport struct {
	peer string
	next http.RoundTripper
}

func (t transport) RoundTrip(r *http.Request) (*http.Response, error) {
	if !on.Load() {
		return t.next.RoundTrip(r)
	}
	step := HTTPStep(t.peer, r.URL.Path)
	Reach(step, Before)
	resp, err := t.next.RoundTrip(r)
	Reach(step, After)
	return resp, err
}

// HTTPStep names the step of a call to peer at path.
func HTTPStep(peer, path string) string {
	path = strings.Trim(path, "/")
	if i := strings.LastIndexByte(path, '/'); i >= 0 {
		path = path[i+1:]
	}
	if path == "" {
		return "http:" + peer
	}
	return "http:" + peer + "-" + path
}

// CloseIdleConnections passes on to the wrapped transport, so
// http.Client.CloseIdleConnections still reaches it.
func (t transport) CloseIdleConnections() {
	if c, ok := t.next.(interface{ CloseIdleConnections() }); ok {
		c.CloseIdleConnections()
	}
}
