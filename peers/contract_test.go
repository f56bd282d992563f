package peers

import (
	"context"
	"slices"
	"strings"
	"testing"
)

// TestDescribe: a command-line relay's declaration becomes its registry
// entry; no output declares nothing; output that is not the contract's
// JSON object is an error, not an empty declaration.
func TestDescribe(t *testing.T) {
	ctx := context.Background()
	decl := `{"killpoints":["relay.after-claim"],"broker":true,"publish_events":true,` +
		`"deadlines":[{"name":"confirm-timeout","value":"2s","why":"w"}],"status":"SELECT 1, 'PENDING'","migrate":"./m up",` +
		`"settings":[{"name":"claim","value":"skip locked","why":"seed"}]}`
	p, err := Describe(ctx, "x", []string{"sh", "-c", `test "$OUTBOXCHAOS_RELAY_DESCRIBE" = 1 && echo '` + decl + `'`})
	if err != nil {
		t.Fatal(err)
	}
	if !p.Features.HasKillPoint("relay.after-claim") || p.Features.HasKillPoint("relay.before-mark") || !p.Features.Broker || !p.Features.PublishEvents {
		t.Errorf("features %+v", p.Features)
	}
	if len(p.Deadlines) != 1 || p.Deadlines[0].Value != "2s" || p.Status == "" || !slices.Equal(p.Migrate, []string{"./m", "up"}) {
		t.Errorf("declaration %+v", p)
	}
	if len(p.Settings) != 2 || p.Settings[1] != "claim=skip locked\tseed" {
		t.Errorf("settings %q", p.Settings)
	}
	empty, err := Describe(ctx, "y", []string{"true"})
	if err != nil || empty.Features.Broker || len(empty.Features.KillPoints) != 0 {
		t.Errorf("a silent relay declares nothing: %+v %v", empty, err)
	}
	if _, err := Describe(ctx, "z", []string{"echo", "hello"}); err == nil {
		t.Error("a declaration that is not JSON must be an error")
	}
	if _, err := Describe(ctx, "z", []string{"false"}); err == nil {
		t.Error("a describe that exits non-zero must be an error")
	}
	for _, bad := range []string{`{"name":"lease","value":"15 minutes"}`, `{"name":"lease","value":"-1s"}`, `{"name":"","value":"1s"}`} {
		_, err := Describe(ctx, "d", []string{"echo", `{"deadlines":[` + bad + `]}`})
		if err == nil || !strings.Contains(err.Error(), "deadline") {
			t.Errorf("declared deadline %s: %v, want an error naming it", bad, err)
		}
	}
	if _, err := Describe(ctx, "d", []string{"echo", `{"deadlines":[{"name":"confirm-timeout","value":"OUTBOXCHAOS_CONFIRM_TIMEOUT"},{"name":"x","value":"none"}]}`}); err != nil {
		t.Errorf("a deadline set from the run's variable, or none: %v", err)
	}
}

// TestRegistry: every registered peer has a name once; Add refuses a name
// taken; a seam peer names its binary and its status query.
func TestRegistry(t *testing.T) {
	seen := map[string]bool{}
	for _, p := range All() {
		if seen[p.Name] {
			t.Errorf("%s registered twice", p.Name)
		}
		seen[p.Name] = true
		if p.Name != Ours && (p.Binary == "" || p.Status == "") {
			t.Errorf("%s: a seam peer needs its binary and status query", p.Name)
		}
	}
	if err := Add(Peer{Name: Ours}); err == nil {
		t.Error("Add must refuse a name taken")
	}
	if _, err := Lookup("nope"); err == nil {
		t.Error("Lookup of an unknown name must fail")
	}
}
