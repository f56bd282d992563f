package audit

import (
	"context"
	"fmt"
	"strings"

	"github.com/outboxchaos/outboxchaos/system/sms"
)

// Lookup asks the vendor's report-lookup API what it did with one
// refkey (sms.Client.Lookup).
type Lookup func(ctx context.Context, refkey string) (sms.Report, error)

// IsURL reports whether a --vendor-report value names the vendor's
// report-lookup API rather than a file.
func IsURL(s string) bool { return strings.HasPrefix(s, "http://") || strings.HasPrefix(s, "https://") }

// LookupReport builds the report from the vendor's report-lookup API:
// each message id the audited rows hold is asked once, in order, and the
// answer becomes its lines (a SENT answer as many SENT lines as its
// count, FAILED and PENDING one line each, never received none). The
// lines carry no time and no stray refkey can be found this way: see
// docs/audit.md. A lookup that fails is a NotJudgedError; Line numbers
// are the lookups', from 1.
func LookupReport(ctx context.Context, lookup Lookup, d Data) ([]ReportLine, error) {
	var refkeys []string
	seen := map[string]bool{}
	add := func(k string) {
		if k != "" && !seen[k] {
			seen[k] = true
			refkeys = append(refkeys, k)
		}
	}
	for _, r := range d.Outbox {
		add(r.MessageID())
	}
	for _, r := range d.Inbox {
		add(r.MessageID)
	}
	var out []ReportLine
	for i, k := range refkeys {
		rep, err := lookup(ctx, k)
		if err != nil {
			return nil, notJudged(fmt.Errorf("vendor report lookup %d of %d: %w", i+1, len(refkeys), err))
		}
		line := ReportLine{Line: i + 1, RefKey: k, Status: rep.Status}
		switch {
		case !rep.Found:
		case rep.Status == sms.ReportSent:
			for range max(rep.Count, 1) {
				out = append(out, line)
			}
		default:
			out = append(out, line)
		}
	}
	return out, nil
}
