package bench

import (
	"fmt"
	"strings"
	"time"
)

// AuditCost is what `outboxchaos audit` costs on a generated month
// (package audit/month): Rows outbox rows, about as many inbox rows and
// report lines, the planted anomalies among them.
type AuditCost struct {
	Rows, ReportLines int
	// Generate is how long writing the month took (tables and files).
	Generate time.Duration
	// Wall and CPU are the audit process's; MaxRSS its peak resident
	// memory in bytes (getrusage).
	Wall, CPU time.Duration
	MaxRSS    int64
	// Found is "" when the audit found exactly the planted anomalies,
	// else what differs; Err is why the measurement failed, if it did.
	Found, Err string
}

// Audit targets: a month of a busy pipeline on this machine.
const (
	AuditTargetWall   = 60 * time.Second
	AuditTargetRSSMiB = 200
)

// auditSection is PERFORMANCE.md's section on the audit, "" when it was
// not measured.
func (r *Report) auditSection() string {
	a := r.Audit
	if a == nil {
		return ""
	}
	var b strings.Builder
	fmt.Fprintf(&b, "\n## Auditing a month\n\n")
	fmt.Fprintf(&b, "`outboxchaos audit` (`outboxbench -audit`) on a month written by `audit/month`: %d outbox rows created over 30 days, an inbox row and a delivery report line for each delivered one, a few anomalies of each kind planted among them (a message delivered twice, lost silently, alerted as lost yet delivered, stuck past its lease, an advert delivered at night, a report line of no row). "+
		"The audit runs as a process of its own, read-only, in chunks of outbox ids (`audit.DefaultChunkRows`); its wall time, CPU and peak RSS are the process's (getrusage).\n\n", a.Rows)
	if a.Err != "" {
		fmt.Fprintf(&b, "Not measured: %s\n", a.Err)
		return b.String()
	}
	found := "exactly the planted anomalies"
	if a.Found != "" {
		found = "**not** the planted anomalies: " + a.Found
	}
	mib := float64(a.MaxRSS) / (1 << 20)
	fmt.Fprintf(&b, "| measurement | value | target |\n|---|---:|---|\n")
	fmt.Fprintf(&b, "| outbox rows / report lines | %d / %d | 1,000,000 each |\n", a.Rows, a.ReportLines)
	fmt.Fprintf(&b, "| month written in | %s | |\n", a.Generate.Round(100*time.Millisecond))
	fmt.Fprintf(&b, "| audit wall time | %s | ≤ %s: %s |\n", a.Wall.Round(100*time.Millisecond), AuditTargetWall, metString(ptr(a.Wall <= AuditTargetWall)))
	fmt.Fprintf(&b, "| audit CPU (its own process) | %s | |\n", a.CPU.Round(100*time.Millisecond))
	fmt.Fprintf(&b, "| audit peak RSS | %.0f MiB | ≤ %d MiB: %s |\n", mib, AuditTargetRSSMiB, metString(ptr(mib <= AuditTargetRSSMiB)))
	fmt.Fprintf(&b, "| rows judged per second of wall time | %.0f | |\n", float64(a.Rows)/a.Wall.Seconds())
	fmt.Fprintf(&b, "\nThe audit found %s.\n", found)
	return b.String()
}

func ptr(b bool) *bool { return &b }
