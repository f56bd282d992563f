package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/outboxchaos/outboxchaos/system/canary"
	"github.com/outboxchaos/outboxchaos/system/killpoint"
)

// TestArmHooks: the start-up arming takes the canary and the hooks from the
// environment, warns about a canary, and rejects an unknown name with the
// variable and the valid names. Not parallel: it sets the environment and
// process-wide hooks.
func TestArmHooks(t *testing.T) {
	t.Cleanup(func() { _ = canary.Arm(""); killpoint.Disarm(); killpoint.DisarmFail() })

	t.Setenv(canary.EnvVar, canary.NoExpiry)
	t.Setenv(killpoint.EnvVar, killpoint.RelayAfterClaim+":2")
	t.Setenv(killpoint.FailEnvVar, killpoint.FailResultUpdate)
	var stderr bytes.Buffer
	if err := armHooks(&stderr); err != nil {
		t.Fatal(err)
	}
	if !canary.On(canary.NoExpiry) || !strings.Contains(stderr.String(), `WARNING: canary bug "no-expiry" is enabled`) {
		t.Fatalf("canary not armed or not warned about: armed %q, stderr %q", canary.Armed(), stderr.String())
	}

	for _, tc := range []struct{ env, value, want string }{
		{canary.EnvVar, "no-such-bug", canary.NoDedup},
		{killpoint.EnvVar, "relay.nowhere", killpoint.RelayAfterConfirm},
		{killpoint.FailEnvVar, killpoint.FailResultUpdate + ":0", "positive integer"},
	} {
		t.Run(tc.env, func(t *testing.T) {
			t.Setenv(tc.env, tc.value)
			err := armHooks(&bytes.Buffer{})
			if err == nil || !strings.Contains(err.Error(), tc.env) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("%s=%s: error %v, want it to name %s and mention %q", tc.env, tc.value, err, tc.env, tc.want)
			}
		})
	}
}
