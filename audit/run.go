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
	// ChunkRows is how many outbox ids one chunk spans (0:
	// DefaultChunkRows); Progress, if set, is told after each chunk how
	// many of how many are judged.
	ChunkRows int64
	Progress  func(done, total int)
}

// Run reads the alert log, opens one read-only snapshot of the database,
// files the report's lines under the chunks of the rows they belong to
// (or, with o.Lookup, asks the vendor for each message read), then reads,
// builds and judges one chunk at a time and adds up their verdicts (see
// chunks.go). An error is a NotJudgedError (exit 3) or a RefusedError
// (exit 2); a Result whose OK is false is a verdict.
func Run(ctx context.Context, o Options) (Result, error) {
	var alerts []checker.AlertRecord
	var err error
	if o.AlertsPath != "" {
		if alerts, err = ReadAlertsFile(o.AlertsPath); err != nil {
			return Result{}, err
		}
	}
	if o.Lookup == nil {
		// A malformed line is named before the database is asked
		// anything: one pass that keeps nothing.
		if err := scanReportFile(o, func(ReportLine) error { return nil }); err != nil {
			return Result{}, err
		}
	}
	rd, err := openReader(ctx, o.Query)
	if err != nil {
		return Result{}, err
	}
	defer rd.close(ctx)
	lo, hi, err := rd.idBounds(ctx)
	if err != nil {
		return Result{}, err
	}
	size := o.ChunkRows
	if size <= 0 {
		// At most maxChunks chunks: each keeps two files open until it
		// is judged.
		size = max(DefaultChunkRows, (hi-lo+maxChunks-1)/maxChunks)
	}
	chunks := chunksOf(lo, hi, size)
	var sp *spill[ReportLine]
	if o.Lookup == nil {
		if sp, _, err = partitionReport(ctx, rd, chunks, o); err != nil {
			return Result{}, err
		}
		defer sp.close()
	}
	byChunk, err := rd.assignAlerts(ctx, chunks, alerts)
	if err != nil {
		return Result{}, err
	}
	inbox, err := rd.partitionInbox(ctx, chunks)
	if err != nil {
		return Result{}, err
	}
	defer inbox.close()
	total := Result{Schema: o.Schema, From: o.From, To: o.To, Now: rd.now, HasAlerts: o.AlertsPath != ""}
	for i, c := range chunks {
		if err := ctx.Err(); err != nil {
			return Result{}, notJudged(fmt.Errorf("audit stopped after %d of %d chunks: %w", i, len(chunks), err))
		}
		d, err := rd.readChunk(ctx, c, inbox, i)
		if err != nil {
			return Result{}, err
		}
		var report []ReportLine
		if sp != nil {
			if report, err = sp.items(i); err != nil {
				return Result{}, err
			}
		}
		if d.Report, d.OutOfRange, err = scope(ctx, rd.tx, o.Query, d, report); err != nil {
			return Result{}, notJudged(err)
		}
		if o.Lookup != nil {
			if d.Report, err = LookupReport(ctx, o.Lookup, d); err != nil {
				return Result{}, err
			}
		}
		d.Alerts, d.HasAlerts = byChunk[i], o.AlertsPath != ""
		total.merge(Judge(Build(d, o.Settings), o.Settings))
		if o.Progress != nil {
			o.Progress(i+1, len(chunks))
		}
	}
	return total, nil
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
