package alert

import (
	"net/http"
	"testing"
	"time"
)

// TestWebhookOwnsTransport: Close drops idle connections, and on
// http.DefaultTransport it would drop everyone else's in the process too.
func TestWebhookOwnsTransport(t *testing.T) {
	w := NewWebhook("http://127.0.0.1:1", time.Second, nil)
	if w.client.Transport == nil || w.client.Transport == http.DefaultTransport {
		t.Fatal("webhook shares http.DefaultTransport")
	}
}
