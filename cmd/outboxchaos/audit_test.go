package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/outboxchaos/outboxchaos/audit/audittest"
	"github.com/outboxchaos/outboxchaos/system/testenv"
)

// The audit command's exit codes, as every command's: 0 a clean data set
// (a read-only role, no flag needed), 1 violations, 2 a writable role or
// a bad command line, 3 what cannot be judged (a missing table, a
// malformed report line, an unreachable database); each says why.
func TestAuditExitCodes(t *testing.T) {
	t.Parallel()
	clean, planted, empty := testenv.NewMigratedSchema(t), testenv.NewMigratedSchema(t), testenv.NewSchema(t)
	dir := t.TempDir()
	cleanFiles := audittest.Clean(t, clean, filepath.Join(dir))
	plantedDir := filepath.Join(dir, "planted")
	if err := os.MkdirAll(plantedDir, 0o755); err != nil {
		t.Fatal(err)
	}
	plantedFiles, _ := audittest.Planted(t, planted, plantedDir)
	bad := audittest.WriteFile(t, dir, "bad.jsonl", "{\"refkey\":\"notification-outbox-1\"}\n{\"refkey\":\"notification-outbox-2\",\"status\":\"LOST\"}\n")
	out := filepath.Join(dir, "out")
	for _, c := range []struct {
		name string
		args []string
		code int
		want []string // in stdout + stderr
	}{
		{"clean", []string{"--pg-url", audittest.ReadOnlyRole(t, clean), "--schema", clean.Schema, "--vendor-report", cleanFiles.Report,
			"--alerts", cleanFiles.Alerts, "--out", out, "--json"}, 0, []string{"AUDIT PASS", "audit.md", "audit.json"}},
		{"planted", []string{"--pg-url", planted.URL, "--schema", planted.Schema, "--vendor-report", plantedFiles.Report,
			"--alerts", plantedFiles.Alerts, "--allow-write-role", "--out", out}, 1, []string{"AUDIT FAIL", "FAIL nothing-twice", "broken nothing-unexpected"}},
		{"writable role", []string{"--pg-url", clean.URL, "--schema", clean.Schema, "--vendor-report", cleanFiles.Report, "--out", out},
			2, []string{"may INSERT, UPDATE or DELETE", "--allow-write-role"}},
		{"no report", []string{"--pg-url", clean.URL, "--schema", clean.Schema}, 2, []string{"--vendor-report is required"}},
		{"lookup API without an account", []string{"--pg-url", clean.URL, "--vendor-report", "http://127.0.0.1:1"},
			2, []string{"--vendor-account and --vendor-password are required"}},
		{"bad range", []string{"--pg-url", clean.URL, "--vendor-report", cleanFiles.Report, "--from", "2026-02-01", "--to", "2026-01-01"}, 2, []string{"is not before --to"}},
		{"missing table", []string{"--pg-url", empty.URL, "--schema", empty.Schema, "--vendor-report", cleanFiles.Report, "--allow-write-role", "--out", out},
			3, []string{"notification_outbox does not exist"}},
		{"malformed line", []string{"--pg-url", clean.URL, "--schema", clean.Schema, "--vendor-report", bad, "--allow-write-role", "--out", out},
			3, []string{"bad.jsonl: line 2: status \"LOST\""}},
		{"unreachable", []string{"--pg-url", "postgres://postgres@127.0.0.1:1/test?sslmode=disable", "--schema", clean.Schema,
			"--vendor-report", cleanFiles.Report, "--out", out}, 3, []string{"unreachable", "--pg-url"}},
	} {
		if strings.HasPrefix(c.name, "lookup") && os.Getenv("OUTBOXCHAOS_VENDOR_ACCOUNT")+os.Getenv("OUTBOXCHAOS_VENDOR_PASSWORD") != "" {
			continue // the environment gives the account
		}
		code, stdout, stderr := runCLI(t, append([]string{"audit"}, c.args...)...)
		for _, w := range c.want {
			if code != c.code || !strings.Contains(stdout+stderr, w) {
				t.Errorf("%s: exit %d (want %d), no %q in\nstdout:\n%s\nstderr:\n%s", c.name, code, c.code, w, stdout, stderr)
				break
			}
		}
	}
	page, err := os.ReadFile(filepath.Join(out, "audit.md"))
	if err != nil || !strings.Contains(string(page), "**FAIL**") {
		t.Errorf("the planted run's page: %v\n%s", err, page)
	}
}
