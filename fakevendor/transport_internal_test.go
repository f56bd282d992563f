package fakevendor

import (
	"net/http"
	"testing"
)

// TestAdminClientOwnsTransport guards a CI failure: on http.DefaultTransport
// an admin call reusing an idle connection broke whenever a parallel test's
// httptest.Server.Close closed the default transport's idle connections.
func TestAdminClientOwnsTransport(t *testing.T) {
	a := NewAdminClient("http://127.0.0.1:1")
	if a.hc.Transport == nil || a.hc.Transport == http.DefaultTransport {
		t.Fatal("admin client shares http.DefaultTransport")
	}
}
