package fakevendor_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/outboxchaos/outboxchaos/fakevendor"
)

func TestAdminClientRoundTrip(t *testing.T) {
	t.Parallel()
	_, base := started(t, fakevendor.Options{HangTimeout: time.Second})
	ctx := context.Background()
	ac := fakevendor.NewAdminClient(base + "/")

	if err := ac.AddRule(ctx, fakevendor.Rule{RefKey: "b", Mode: fakevendor.Fail5xx, Times: 1}); err != nil {
		t.Fatal(err)
	}
	if err := ac.SetDefault(ctx, fakevendor.Status429); err != nil {
		t.Fatal(err)
	}
	tok := mustToken(t, base)
	if s := mustStatus(t, base, tok, "b"); s != http.StatusServiceUnavailable {
		t.Fatalf("rule via admin: %d, want 503", s)
	}
	if s := mustStatus(t, base, tok, "c"); s != http.StatusTooManyRequests {
		t.Fatalf("default via admin: %d, want 429", s)
	}
	if err := ac.ResetRules(ctx); err != nil {
		t.Fatal(err)
	}
	mustStatus(t, base, tok, "a")
	mustStatus(t, base, tok, "a")

	led, err := ac.Ledger(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(led) != 2 || led[0].RefKey != "a" || led[1].Seq != 2 || led[1].Call != 4 || led[0].ContentHash != fakevendor.Hash("hello a") {
		t.Fatalf("ledger = %+v", led)
	}
	if n, err := ac.Count(ctx, "a"); err != nil || n != 2 {
		t.Fatalf("count a = %d %v, want 2", n, err)
	}
	if n, err := ac.Count(ctx, "b"); err != nil || n != 0 {
		t.Fatalf("count b = %d %v, want 0", n, err)
	}
	f, err := ac.Fired(ctx)
	if err != nil || f[fakevendor.Fail5xx] != 1 || f[fakevendor.Status429] != 1 || len(f) != 2 {
		t.Fatalf("fired = %v %v", f, err)
	}
	calls, err := ac.Calls(ctx)
	if err != nil || len(calls) != 4 || calls[0].Mode != fakevendor.Fail5xx || !calls[3].Accepted {
		t.Fatalf("calls = %+v %v", calls, err)
	}

	// Bad rules: the admin client reports the server's 400 message.
	err = ac.AddRule(ctx, fakevendor.Rule{RefKey: "x", Mode: "explode"})
	if err == nil || !strings.Contains(err.Error(), "HTTP 400") || !strings.Contains(err.Error(), `unknown mode "explode"`) {
		t.Fatalf("bad mode: err = %v, want HTTP 400 unknown mode", err)
	}
	if err := ac.SetDefault(ctx, "explode"); err == nil || !strings.Contains(err.Error(), "HTTP 400") {
		t.Fatalf("bad default: err = %v, want HTTP 400", err)
	}
	for _, body := range []string{
		`{"mode":"5xx"}`,               // neither refkey nor call
		`{"refkey":"x","mode":"nope"}`, // unknown mode
		`{"refkey":"x","mdoe":"5xx"}`,  // misspelt field
		`not json`,
	} {
		resp, err := hc.Post(base+"/admin/rules", "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		raw, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		var eb struct {
			Error string `json:"error"`
		}
		if resp.StatusCode != http.StatusBadRequest || json.Unmarshal(raw, &eb) != nil || eb.Error == "" {
			t.Errorf("POST /admin/rules %s = %d %s, want 400 with a JSON error", body, resp.StatusCode, raw)
		}
	}
	if s := mustStatus(t, base, tok, "x"); s != http.StatusOK {
		t.Fatalf("after rejected rules: %d, want 200 (nothing was installed)", s)
	}
}
