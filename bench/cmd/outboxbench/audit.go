package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/outboxchaos/outboxchaos/audit"
	"github.com/outboxchaos/outboxchaos/audit/month"
	"github.com/outboxchaos/outboxchaos/bench"
	"github.com/outboxchaos/outboxchaos/system/app"
	"github.com/outboxchaos/outboxchaos/system/config"
	"github.com/outboxchaos/outboxchaos/system/sandbox"
)

// measureAudit writes a month of rows outbox rows (with the default
// planted anomalies) into a sandbox schema of its own, runs bin audit on
// it as a child process, and reads its wall time, CPU, peak RSS and
// findings.
func measureAudit(ctx context.Context, bin string, rows int, pgURL, amqpURL string, progress io.Writer) *bench.AuditCost {
	a := &bench.AuditCost{Rows: rows}
	if err := auditMonth(ctx, bin, a, pgURL, amqpURL, progress); err != nil {
		a.Err = err.Error()
		fmt.Fprintf(progress, "[bench] audit: %v\n", err)
	}
	return a
}

func auditMonth(ctx context.Context, bin string, a *bench.AuditCost, pgURL, amqpURL string, progress io.Writer) error {
	sb, err := sandbox.New(ctx, pgURL, amqpURL, "auditbench")
	if err != nil {
		return fmt.Errorf("create a schema for the month: %w", err)
	}
	defer func() { _ = sb.Close() }()
	cfg := config.Default()
	cfg.PGURL, cfg.AMQPURL, cfg.Prefix = sb.PGURL, amqpURL, sb.Prefix
	if err := app.Migrate(ctx, cfg); err != nil {
		return fmt.Errorf("migrate the month's schema: %w", err)
	}
	dir, err := os.MkdirTemp("", "outboxbench-audit-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	conn, err := pgx.Connect(ctx, sb.PGURL)
	if err != nil {
		return fmt.Errorf("connect to the month's schema: %w", err)
	}
	fmt.Fprintf(progress, "[bench] audit: writing a month of %d rows\n", a.Rows)
	start := time.Now()
	spec := month.Spec{Rows: a.Rows, Seed: 1, Planted: month.DefaultPlanted}
	files, err := month.Write(ctx, conn, dir, spec)
	_ = conn.Close(context.WithoutCancel(ctx))
	if err != nil {
		return err
	}
	a.Generate = time.Since(start)
	if a.ReportLines, err = countLines(files.Report); err != nil {
		return err
	}
	out := filepath.Join(dir, "out")
	cmd := exec.CommandContext(ctx, bin, "audit", "--pg-url", sb.PGURL, "--schema", sb.Schema, "--vendor-report", files.Report,
		"--alerts", files.Alerts, "--out", out, "--json", "--allow-write-role")
	cmd.Stderr = progress
	fmt.Fprintf(progress, "[bench] audit: %s audit on %d rows and %d report lines\n", bin, a.Rows, a.ReportLines)
	start = time.Now()
	err = cmd.Run()
	a.Wall = time.Since(start)
	var exit *exec.ExitError
	if err != nil && !(errors.As(err, &exit) && exit.ExitCode() == 1) {
		return fmt.Errorf("run %s audit: %w", bin, err)
	}
	if ps := cmd.ProcessState; ps != nil {
		a.CPU = ps.UserTime() + ps.SystemTime()
		if ru, ok := ps.SysUsage().(*syscall.Rusage); ok {
			a.MaxRSS = ru.Maxrss * 1024
		}
	}
	raw, err := os.ReadFile(filepath.Join(out, "audit.json"))
	if err != nil {
		return fmt.Errorf("read the audit's findings: %w", err)
	}
	var res audit.Result
	if err := json.Unmarshal(raw, &res); err != nil {
		return fmt.Errorf("read the audit's findings: %w", err)
	}
	found := map[string]int{}
	for _, v := range res.Invariants {
		if v.NotJudged == "" {
			found[v.Name] = len(v.Findings)
		}
	}
	a.Found = spec.Planted.Found(found)
	fmt.Fprintf(progress, "[bench] audit: %s wall, %s CPU, %d MiB peak; planted found exactly: %v\n",
		a.Wall.Round(100*time.Millisecond), a.CPU.Round(100*time.Millisecond), a.MaxRSS>>20, a.Found == "")
	return nil
}

// countLines counts a report's lines after its header.
func countLines(path string) (int, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	buf := make([]byte, 1<<20)
	n := 0
	for {
		k, err := f.Read(buf)
		for _, c := range buf[:k] {
			if c == '\n' {
				n++
			}
		}
		if errors.Is(err, io.EOF) {
			return max(n-1, 0), nil
		}
		if err != nil {
			return 0, err
		}
	}
}
