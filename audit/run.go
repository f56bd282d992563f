package audit

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/outboxchaos/outboxchaos/checker"
)

// Options are one audit's inputs: the database to read (Query), the
// vendor's report, the alert log (optional) and the settings judged by.
type Options struct {
	Query
	// ReportPath is the vendor's report; ReportFormat FormatCSV,
	// FormatJSONL or "" (by the file); Columns maps our column names to
	// the report's. With Lookup set, ReportPath is unused: the report is
	// asked of the vendor's report-lookup API, message by message.
	ReportPath   string
	Lookup       Lookup
	ReportFormat string
	Columns      map[string]string
	// AlertsPath is the alert log ("": none).
	AlertsPath string
	Settings   Settings
}

// Run reads the report and the alert log, then the database (Read) and,
// with o.Lookup, asks the vendor for the report of each message read,
// builds the snapshot and judges it. An error is a NotJudgedError (exit
// 3) or a RefusedError (exit 2); a Result whose OK is false is a
// verdict.
func Run(ctx context.Context, o Options) (Result, error) {
	var report []ReportLine
	var err error
	if o.Lookup == nil {
		if report, err = ReadReportFile(o.ReportPath, o.ReportFormat, o.Columns); err != nil {
			return Result{}, err
		}
	}
	var d Data
	var alerts []checker.AlertRecord
	if o.AlertsPath != "" {
		if alerts, err = ReadAlertsFile(o.AlertsPath); err != nil {
			return Result{}, err
		}
	}
	if d, err = Read(ctx, o.Query, report); err != nil {
		return Result{}, err
	}
	if o.Lookup != nil {
		if d.Report, err = LookupReport(ctx, o.Lookup, d); err != nil {
			return Result{}, err
		}
	}
	d.Alerts, d.HasAlerts = alerts, o.AlertsPath != ""
	r := Judge(Build(d, o.Settings), o.Settings)
	r.Schema, r.From, r.To = o.Schema, o.From, o.To
	return r, nil
}

// Write writes the audit's page to dir/audit.md and, with withJSON,
// dir/audit.json; it returns the paths written.
func (r Result) Write(dir string, withJSON bool) ([]string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("create %s: %w", dir, err)
	}
	write := func(name string, render func(f *os.File) error) (string, error) {
		path := filepath.Join(dir, name)
		f, err := os.Create(path)
		if err != nil {
			return "", fmt.Errorf("create %s: %w", path, err)
		}
		if err := render(f); err != nil {
			_ = f.Close()
			return "", fmt.Errorf("write %s: %w", path, err)
		}
		if err := f.Close(); err != nil {
			return "", fmt.Errorf("write %s: %w", path, err)
		}
		return path, nil
	}
	md, err := write("audit.md", func(f *os.File) error { return r.Markdown(f) })
	if err != nil {
		return nil, err
	}
	out := []string{md}
	if withJSON {
		js, err := write("audit.json", func(f *os.File) error { return r.JSON(f) })
		if err != nil {
			return out, err
		}
		out = append(out, js)
	}
	return out, nil
}
