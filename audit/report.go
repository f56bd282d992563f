package audit

import (
	"bufio"
	"bytes"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/outboxchaos/outboxchaos/checker"
)

// ReportLine is one line of the vendor's delivery report: a message the
// vendor delivered (status SENT), failed to deliver (FAILED) or has no
// final answer for yet (PENDING). Only SENT lines are deliveries.
type ReportLine struct {
	Line     int       `json:"line"` // its line number in the file, from 1
	RefKey   string    `json:"refkey"`
	Status   string    `json:"status"`
	Phone    string    `json:"phone,omitempty"`
	At       time.Time `json:"at,omitzero"`
	DedupKey string    `json:"dedup_key,omitempty"`
}

// Report statuses.
const (
	ReportSent    = "SENT"
	ReportFailed  = "FAILED"
	ReportPending = "PENDING"
)

// Report columns, by the names docs/audit.md gives them.
const (
	ColRefKey   = "refkey"
	ColStatus   = "status"
	ColPhone    = "phone"
	ColAt       = "at"
	ColDedupKey = "dedup_key"
)

// Columns are the report's columns; refkey is the one required.
var Columns = []string{ColRefKey, ColStatus, ColPhone, ColAt, ColDedupKey}

// Report formats.
const (
	FormatCSV   = "csv"
	FormatJSONL = "jsonl"
)

// ParseColumns reads a column mapping "ours=theirs,…" (for a vendor that
// names its columns differently) into ours → theirs.
func ParseColumns(s string) (map[string]string, error) {
	out := map[string]string{}
	if strings.TrimSpace(s) == "" {
		return out, nil
	}
	for _, p := range strings.Split(s, ",") {
		ours, theirs, ok := strings.Cut(strings.TrimSpace(p), "=")
		if !ok || theirs == "" || !slices.Contains(Columns, ours) {
			return nil, fmt.Errorf("column mapping %q: want ours=theirs with ours one of %s", p, strings.Join(Columns, ", "))
		}
		out[ours] = theirs
	}
	return out, nil
}

// sniff picks a report's format by its extension, else its first byte.
func sniff(path string, b []byte) string {
	switch strings.ToLower(filepath.Ext(path)) {
	case ".csv":
		return FormatCSV
	case ".jsonl", ".ndjson", ".json":
		return FormatJSONL
	}
	if t := bytes.TrimSpace(b); len(t) > 0 && t[0] == '{' {
		return FormatJSONL
	}
	return FormatCSV
}

// ReadReport parses a report in format (FormatCSV: a header line, then one
// line per message; FormatJSONL: one object per line, blank lines
// skipped).
func ReadReport(r io.Reader, format string, columns map[string]string) ([]ReportLine, error) {
	var out []ReportLine
	err := ScanReport(r, format, columns, func(l ReportLine) error { out = append(out, l); return nil })
	return out, err
}

// ScanReport parses a report as ReadReport does, handing each line to
// emit as it is read: a report of any length is read in constant memory.
func ScanReport(r io.Reader, format string, columns map[string]string, emit func(ReportLine) error) error {
	col := func(ours string) string {
		if t, ok := columns[ours]; ok {
			return t
		}
		return ours
	}
	switch format {
	case FormatCSV:
		return scanCSV(r, col, emit)
	case FormatJSONL:
		return scanJSONL(r, col, emit)
	}
	return fmt.Errorf("unknown report format %q (want %s or %s)", format, FormatCSV, FormatJSONL)
}

func scanCSV(r io.Reader, col func(string) string, emit func(ReportLine) error) error {
	cr := csv.NewReader(bufio.NewReaderSize(r, 1<<16))
	cr.FieldsPerRecord = 0
	cr.ReuseRecord = true
	header, err := cr.Read()
	if err != nil {
		if errors.Is(err, io.EOF) {
			return errors.New("line 1: empty file, want a header line naming the columns")
		}
		return fmt.Errorf("line 1: %w", err)
	}
	idx := map[string]int{}
	for i, h := range header {
		idx[strings.TrimSpace(strings.TrimPrefix(h, "\ufeff"))] = i
	}
	if _, ok := idx[col(ColRefKey)]; !ok {
		return fmt.Errorf("line 1: no %q column in the header %q", col(ColRefKey), strings.Join(header, ","))
	}
	for {
		rec, err := cr.Read()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			var pe *csv.ParseError
			if errors.As(err, &pe) {
				return fmt.Errorf("line %d: %w", pe.Line, pe.Err)
			}
			return fmt.Errorf("read: %w", err)
		}
		line, _ := cr.FieldPos(0)
		get := func(ours string) string {
			if i, ok := idx[col(ours)]; ok && i < len(rec) {
				return strings.TrimSpace(rec[i])
			}
			return ""
		}
		l, err := newLine(line, get)
		if err != nil {
			return err
		}
		if err := emit(l); err != nil {
			return err
		}
	}
}

func scanJSONL(r io.Reader, col func(string) string, emit func(ReportLine) error) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 16*1024*1024)
	for n := 1; sc.Scan(); n++ {
		raw := bytes.TrimSpace(sc.Bytes())
		if len(raw) == 0 {
			continue
		}
		var obj map[string]any
		if err := json.Unmarshal(raw, &obj); err != nil {
			return fmt.Errorf("line %d: not a JSON object: %w", n, err)
		}
		get := func(ours string) string {
			switch v := obj[col(ours)].(type) {
			case string:
				return strings.TrimSpace(v)
			case nil:
				return ""
			default:
				return fmt.Sprint(v)
			}
		}
		l, err := newLine(n, get)
		if err != nil {
			return err
		}
		if err := emit(l); err != nil {
			return err
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("read: %w", err)
	}
	return nil
}

// newLine builds line n from its columns: a refkey is required, the
// status is SENT unless said, the time RFC 3339 when given.
func newLine(n int, get func(string) string) (ReportLine, error) {
	l := ReportLine{Line: n, RefKey: get(ColRefKey), Phone: get(ColPhone), DedupKey: get(ColDedupKey), Status: strings.ToUpper(get(ColStatus))}
	if l.RefKey == "" {
		return l, fmt.Errorf("line %d: no refkey", n)
	}
	switch l.Status {
	case "":
		l.Status = ReportSent
	case ReportSent, ReportFailed, ReportPending:
	default:
		return l, fmt.Errorf("line %d: status %q: want %s, %s or %s", n, l.Status, ReportSent, ReportFailed, ReportPending)
	}
	if at := get(ColAt); at != "" {
		t, err := time.Parse(time.RFC3339Nano, at)
		if err != nil {
			return l, fmt.Errorf("line %d: time %q is not RFC 3339 (2026-01-31T09:00:00+09:00)", n, at)
		}
		l.At = t
	}
	return l, nil
}

// ReadAlertsFile reads an alert log: one alert a line, as JSON, either the
// pipeline's alert ({"kind", "outbox_id", "message_id", "dedup_key",
// "reason"}) or the webhook's body that carries it under "outboxchaos".
// A line that is neither is a NotJudgedError naming its line number.
func ReadAlertsFile(path string) ([]checker.AlertRecord, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, notJudged(fmt.Errorf("read alert log: %w", err))
	}
	defer f.Close()
	out, err := ReadAlerts(f)
	if err != nil {
		return nil, notJudged(fmt.Errorf("alert log %s: %w", path, err))
	}
	return out, nil
}

// ReadAlerts parses an alert log (ReadAlertsFile).
func ReadAlerts(r io.Reader) ([]checker.AlertRecord, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 16*1024*1024)
	var out []checker.AlertRecord
	for n := 1; sc.Scan(); n++ {
		raw := bytes.TrimSpace(sc.Bytes())
		if len(raw) == 0 {
			continue
		}
		var line struct {
			checker.AlertRecord
			Body *checker.AlertRecord `json:"outboxchaos"`
		}
		if err := json.Unmarshal(raw, &line); err != nil {
			return nil, fmt.Errorf("line %d: not a JSON alert: %w", n, err)
		}
		a := line.AlertRecord
		if line.Body != nil {
			a = *line.Body
		}
		if a.Kind == "" {
			return nil, fmt.Errorf("line %d: an alert without a kind", n)
		}
		out = append(out, a)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read: %w", err)
	}
	return out, nil
}
