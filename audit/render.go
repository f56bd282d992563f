package audit

import (
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"

	"github.com/outboxchaos/outboxchaos/checker"
	"github.com/outboxchaos/outboxchaos/history"
)

// Summary is the audit's verdict in one line per invariant, for a
// terminal: "PASS name", "FAIL name (n): first detail" or "---- name not
// judged: why", then the overall line.
func (r Result) Summary(w io.Writer) error {
	var b strings.Builder
	for _, v := range r.Invariants {
		switch {
		case v.NotJudged != "":
			fmt.Fprintf(&b, "  ---- %-22s not judged: %s\n", v.Name, v.NotJudged)
		case v.Valid:
			fmt.Fprintf(&b, "  PASS %-22s\n", v.Name)
		default:
			fmt.Fprintf(&b, "  FAIL %-22s %d: %s\n", v.Name, len(v.Findings), v.Findings[0].Detail)
		}
	}
	if r.OK() {
		fmt.Fprintf(&b, "AUDIT PASS %s\n", r.counts())
	} else {
		fmt.Fprintf(&b, "AUDIT FAIL %s: broken %s\n", r.counts(), strings.Join(r.Broken(), ", "))
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// counts is what the audit read, and the fates, in one line.
func (r Result) counts() string {
	var fates []string
	for _, f := range []checker.Fate{checker.FateOnce, checker.FateDuplicated, checker.FateLostSilently, checker.FateLostVisibly,
		checker.FateSkipped, checker.FateStuck} {
		fates = append(fates, fmt.Sprintf("%s=%d", strings.ReplaceAll(string(f), " ", "_"), r.Fates[f]))
	}
	return fmt.Sprintf("outbox=%d inbox=%d report_lines=%d alerts=%d in_flight=%d %s",
		r.Outbox, r.Inbox, r.Report, r.Alerts, len(r.InFlight), strings.Join(fates, " "))
}

// Markdown writes the audit's page: what was read, a table of the
// invariants, then each broken one with every violating message's outbox
// row, inbox rows and report lines, and the messages left in flight.
func (r Result) Markdown(w io.Writer) error {
	var b strings.Builder
	title := "# Audit"
	if r.Schema != "" {
		title += " of schema `" + r.Schema + "`"
	}
	fmt.Fprintf(&b, "%s\n\n", title)
	fmt.Fprintf(&b, "Snapshot at %s; range %s to %s.\n", stamp(r.Now), or(stamp(r.From), "the start"), or(stamp(r.To), "the snapshot"))
	fmt.Fprintf(&b, "Read %d outbox rows, %d inbox rows, %d report lines", r.Outbox, r.Inbox, r.Report)
	if r.OutOfRange > 0 {
		fmt.Fprintf(&b, " (%d more outside the range, left out)", r.OutOfRange)
	}
	if r.HasAlerts {
		fmt.Fprintf(&b, " and %d alerts.\n\n", r.Alerts)
	} else {
		b.WriteString("; no alert log.\n\n")
	}
	if r.OK() {
		b.WriteString("**PASS**: every invariant the audit could judge holds.\n\n")
	} else {
		fmt.Fprintf(&b, "**FAIL**: broken %s.\n\n", strings.Join(r.Broken(), ", "))
	}
	fmt.Fprintf(&b, "`%s`\n\n", r.counts())
	b.WriteString("| invariant | looks for | verdict |\n|---|---|---|\n")
	for _, v := range r.Invariants {
		fmt.Fprintf(&b, "| %s | %s | %s |\n", v.Name, v.Category, v.word())
	}
	for _, v := range r.Invariants {
		if v.Valid {
			continue
		}
		fmt.Fprintf(&b, "\n## %s: %s (%s)\n\n%s.\n", v.Name, plural(len(v.Findings), "violation"), v.Category, v.Doc)
		for _, f := range v.Findings {
			fmt.Fprintf(&b, "\n- %s\n", f.Detail)
			for _, m := range f.Messages {
				m.markdown(&b)
			}
		}
	}
	if len(r.InFlight) > 0 {
		fmt.Fprintf(&b, "\n## In flight at the snapshot (%d, not judged stuck or lost yet)\n\n", len(r.InFlight))
		mids := slices.SortedFunc(maps.Keys(r.InFlight), byOutboxID)
		for _, mid := range mids[:min(len(mids), maxInFlightListed)] {
			fmt.Fprintf(&b, "- %s: %s\n", mid, r.InFlight[mid])
		}
		if len(mids) > maxInFlightListed {
			fmt.Fprintf(&b, "- … and %d more (audit.json, with --json, lists every one)\n", len(mids)-maxInFlightListed)
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// word is the verdict's cell in the table.
func (v Verdict) word() string {
	switch {
	case v.NotJudged != "":
		return "not judged: " + v.NotJudged
	case v.Valid:
		return "PASS"
	}
	return fmt.Sprintf("**FAIL** (%d)", len(v.Findings))
}

// markdown writes a message's rows and lines under a finding.
func (m Message) markdown(b *strings.Builder) {
	if m.Outbox != nil {
		o := m.Outbox
		fmt.Fprintf(b, "  - outbox: `id=%d dedup_key=%s kind=%s status=%s", o.ID, o.DedupKey, o.Kind, o.Status)
		if o.Reason != "" {
			fmt.Fprintf(b, " status_reason=%s", o.Reason)
		}
		fmt.Fprintf(b, " attempts=%d created_at=%s updated_at=%s published_at=%s", o.Attempts, stamp(o.CreatedAt), stamp(o.UpdatedAt), stamp(o.PublishedAt))
		if o.Status == history.OutboxPublishing {
			fmt.Fprintf(b, " claimed_by=%s claimed_until=%s", o.ClaimedBy, stamp(o.ClaimedUntil))
		}
		b.WriteString("`\n")
	} else {
		fmt.Fprintf(b, "  - outbox: no row for %s\n", m.MessageID)
	}
	if len(m.Inbox) == 0 {
		b.WriteString("  - inbox: no row\n")
	}
	for _, r := range m.Inbox {
		fmt.Fprintf(b, "  - inbox: `id=%d message_id=%s status=%s", r.ID, r.MessageID, r.Status)
		if r.Settled != "" {
			fmt.Fprintf(b, " settled=%s", r.Settled)
		}
		if r.VendorCode != "" || r.Error != "" {
			fmt.Fprintf(b, " vendor_code=%s error=%q", r.VendorCode, r.Error)
		}
		fmt.Fprintf(b, " created_at=%s updated_at=%s`\n", stamp(r.CreatedAt), stamp(r.UpdatedAt))
	}
	if len(m.Report) == 0 {
		b.WriteString("  - report: no line\n")
	}
	for _, l := range m.Report {
		fmt.Fprintf(b, "  - report line %d: `refkey=%s status=%s phone=%s at=%s", l.Line, l.RefKey, l.Status, l.Phone, stamp(l.At))
		if l.DedupKey != "" {
			fmt.Fprintf(b, " dedup_key=%s", l.DedupKey)
		}
		b.WriteString("`\n")
	}
}

// JSON writes the result as indented JSON.
func (r Result) JSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	if err := enc.Encode(r); err != nil {
		return fmt.Errorf("encode the audit as JSON: %w", err)
	}
	return nil
}

// maxInFlightListed bounds the page's list of messages in flight: a busy
// day has thousands, and the page is for the violations.
const maxInFlightListed = 200

// byOutboxID orders message ids by their outbox id, then as text.
func byOutboxID(a, b string) int {
	if c := cmp.Compare(outboxID(a), outboxID(b)); c != 0 {
		return c
	}
	return strings.Compare(a, b)
}

// plural is "n word" or "n words".
func plural(n int, word string) string {
	if n == 1 {
		return "1 " + word
	}
	return fmt.Sprintf("%d %ss", n, word)
}

// or returns s, or alt when s is the zero time's "-".
func or(s, alt string) string {
	if s == "-" {
		return alt
	}
	return s
}
