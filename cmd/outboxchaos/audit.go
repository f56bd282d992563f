//go:build !pod

package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"

	"github.com/outboxchaos/outboxchaos/audit"
	"github.com/outboxchaos/outboxchaos/auditor"
	"github.com/outboxchaos/outboxchaos/system/config"
	"github.com/outboxchaos/outboxchaos/system/sms"
)

// auditUsage is the audit's command line, for its help and usage errors.
const auditUsage = "--pg-url URL --schema S --vendor-report FILE|URL [--from T --to T] [--alerts FILE] [--out DIR] [--json] [--allow-write-role]"

// runAudit judges a production database's outbox and inbox and the
// vendor's delivery report by the checker's invariants, read-only
// (package audit).
func runAudit(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := subcommandFlags("audit", auditUsage, commands["audit"].summary, stderr)
	def := audit.Defaults()
	pgURL := fs.String("pg-url", "", "the database to audit (default: $OUTBOXCHAOS_PG_URL)")
	schema := fs.String("schema", "public", "the schema of notification_outbox and notification_histories")
	report := fs.String("vendor-report", "", "the vendor's delivery report, CSV or JSON lines (docs/audit.md: its columns), or the URL of its report-lookup API")
	account := fs.String("vendor-account", "", "the report-lookup API's account (default: $OUTBOXCHAOS_VENDOR_ACCOUNT)")
	password := fs.String("vendor-password", "", "its password (default: $OUTBOXCHAOS_VENDOR_PASSWORD)")
	format := fs.String("report-format", "", "csv or jsonl (default: by the file's extension, else its first character)")
	columns := fs.String("report-columns", "", "the report's own column names, as ours=theirs,… (refkey=msg_id,at=delivered_at)")
	names := fs.String("names", "", "the schema's own table and column names where they differ from the design's, as table=name or table.column=name,… (outbox=sms_outbox,outbox.created_at=inserted_at,inbox.message_id=msg_id)")
	from := fs.String("from", "", "audit outbox rows created at or after T (RFC 3339, or YYYY-MM-DD: that day's start in Seoul)")
	to := fs.String("to", "", "audit outbox rows created before T (same forms as --from)")
	alerts := fs.String("alerts", "", "the alerts the pipeline sent, one JSON alert a line (without it, the alert invariants are not judged)")
	out := fs.String("out", "artifacts/audit", "the folder to write audit.md (and audit.json) in")
	withJSON := fs.Bool("json", false, "write audit.json beside audit.md")
	allowWrite := fs.Bool("allow-write-role", false, "audit as a role that may write the audited tables (the transaction is read-only still)")
	lease := fs.Duration("lease", def.Lease, "the relay's lease: a row PUBLISHING past it is stuck")
	sending := fs.Duration("sending-timeout", def.SendingTimeout, "cleanup's timeout: an inbox row SENDING past it is stuck")
	alertAttempt := fs.Int("alert-attempt", def.AlertAttempt, "the relay's alert-attempt: a row with that many failed publishes must have a RELAY_ATTEMPTS alert (0: not checked)")
	grace := fs.Duration("grace", def.Grace, "how long a message may sit between steps the tables do not show before it is judged")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usagef("unexpected arguments: %s (usage: outboxchaos audit %s)", strings.Join(fs.Args(), " "), auditUsage)
	}
	if *pgURL == "" {
		*pgURL = os.Getenv("OUTBOXCHAOS_PG_URL")
	}
	switch {
	case *pgURL == "":
		return usagef("--pg-url is required (or OUTBOXCHAOS_PG_URL)")
	case *report == "":
		return usagef("--vendor-report is required: the vendor's delivery report, CSV or JSON lines")
	case *schema == "":
		return usagef("--schema must name a schema")
	case *lease <= 0 || *sending <= 0 || *grace < 0 || *alertAttempt < 0:
		return usagef("--lease and --sending-timeout must be positive, --grace and --alert-attempt not negative")
	}
	o := audit.Options{Query: audit.Query{URL: *pgURL, Schema: *schema, AllowWriteRole: *allowWrite},
		ReportPath: *report, ReportFormat: *format, AlertsPath: *alerts, Settings: def}
	o.Settings.Lease, o.Settings.SendingTimeout, o.Settings.Grace, o.Settings.AlertAttempt = *lease, *sending, *grace, *alertAttempt
	var err error
	if o.From, err = auditTime("--from", *from); err != nil {
		return err
	}
	if o.To, err = auditTime("--to", *to); err != nil {
		return err
	}
	if !o.From.IsZero() && !o.To.IsZero() && !o.From.Before(o.To) {
		return usagef("--from %s is not before --to %s", *from, *to)
	}
	if *format != "" && *format != audit.FormatCSV && *format != audit.FormatJSONL {
		return usagef("--report-format %q: want %s or %s", *format, audit.FormatCSV, audit.FormatJSONL)
	}
	if o.Columns, err = audit.ParseColumns(*columns); err != nil {
		return usagef("--report-columns: %v", err)
	}
	if o.Names, err = audit.ParseNames(*names); err != nil {
		return usagef("--names: %v", err)
	}
	if audit.IsURL(*report) {
		acct, pass := orEnv(*account, "OUTBOXCHAOS_VENDOR_ACCOUNT"), orEnv(*password, "OUTBOXCHAOS_VENDOR_PASSWORD")
		if acct == "" || pass == "" {
			return usagef("--vendor-report %s is the report-lookup API: --vendor-account and --vendor-password are required", *report)
		}
		o.Lookup = sms.New(*report, acct, pass, config.Default().VendorTimeout).Lookup
	}
	bar := auditProgress(stderr)
	o.Progress = bar.update
	res, err := audit.Run(ctx, o)
	bar.finish()
	var refused *audit.RefusedError
	if errors.As(err, &refused) {
		return usageError{refused}
	}
	if err != nil {
		return err
	}
	if err := res.Summary(stdout); err != nil {
		return err
	}
	paths, err := res.Write(*out, *withJSON)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "report: %s\n", strings.Join(paths, ", "))
	if !res.OK() {
		return errVerdictFailed
	}
	return nil
}

// orEnv returns s, or the environment variable env when s is empty.
func orEnv(s, env string) string {
	if s == "" {
		return os.Getenv(env)
	}
	return s
}

// auditTime parses a --from or --to value: RFC 3339, or a date taken as
// its start in Seoul (the design's business day); "" is no bound.
func auditTime(flag, v string) (time.Time, error) {
	if v == "" {
		return time.Time{}, nil
	}
	if t, err := time.Parse(time.RFC3339Nano, v); err == nil {
		return t, nil
	}
	if t, err := time.ParseInLocation(time.DateOnly, v, auditor.Seoul); err == nil {
		return t, nil
	}
	return time.Time{}, usagef("%s %q: want RFC 3339 (2026-01-31T09:00:00+09:00) or a date (2026-01-31)", flag, v)
}

// auditBar shows, on a terminal, how many of the audit's chunks are
// judged; elsewhere nothing (the summary follows on stdout).
type auditBar struct {
	bar *progressbar.ProgressBar
	w   io.Writer
}

func auditProgress(w io.Writer) *auditBar {
	if f, ok := w.(*os.File); !ok || !term.IsTerminal(int(f.Fd())) {
		return &auditBar{}
	}
	return &auditBar{w: w}
}

// update moves the bar to done of total chunks, making it at the first.
func (a *auditBar) update(done, total int) {
	if a.w == nil {
		return
	}
	if a.bar == nil {
		a.bar = progressbar.NewOptions(total, progressbar.OptionSetWriter(a.w), progressbar.OptionSetWidth(30),
			progressbar.OptionSetDescription("audit"), progressbar.OptionSetItsString("chunks"),
			progressbar.OptionShowCount(), progressbar.OptionSetPredictTime(true), progressbar.OptionShowElapsedTimeOnFinish())
	}
	_ = a.bar.Set(done)
}

func (a *auditBar) finish() {
	if a.bar != nil {
		_ = a.bar.Finish()
		_, _ = fmt.Fprintln(a.w)
	}
}
