package audit

import (
	"bufio"
	"context"
	"encoding/gob"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/outboxchaos/outboxchaos/checker"
)

// An audit reads in chunks, in key order, so a month of a busy pipeline
// (a million outbox rows, inbox rows and report lines) is judged in
// constant memory: each chunk is the outbox rows of one range of ids with
// the inbox rows, report lines and alerts that belong to them, judged by
// the checker's invariants as a whole audit would be. Nothing the
// invariants judge spans two messages of different rows, so the chunks'
// verdicts together are the whole audit's. What belongs to no audited
// row (an inbox row naming no outbox row, a report line no row owns, an
// alert naming no message) is the loose chunk, judged last.

// DefaultChunkRows is how many outbox ids a chunk spans, unless that
// makes more than maxChunks chunks.
const (
	DefaultChunkRows = 10_000
	maxChunks        = 256
)

// chunk is one range of outbox ids [Lo, Hi), or the loose chunk.
type chunk struct {
	Lo, Hi int64
	Loose  bool
}

// chunksOf splits [lo, hi) into chunks of size ids, then the loose chunk.
func chunksOf(lo, hi, size int64) []chunk {
	var out []chunk
	for c := lo; c < hi; c += size {
		out = append(out, chunk{Lo: c, Hi: min(c+size, hi)})
	}
	return append(out, chunk{Loose: true})
}

// of returns the index of the chunk holding outbox id id (the loose
// chunk's when none does).
func of(chunks []chunk, id int64) int {
	loose := len(chunks) - 1
	if id <= 0 || loose == 0 || id < chunks[0].Lo || id >= chunks[loose-1].Hi {
		return loose
	}
	return int((id - chunks[0].Lo) / (chunks[0].Hi - chunks[0].Lo))
}

// outboxIDOf returns the outbox id a message_id of the design's form
// names (0: none).
func outboxIDOf(mid string) int64 {
	rest, ok := strings.CutPrefix(mid, "notification-outbox-")
	if !ok {
		return 0
	}
	id, err := strconv.ParseInt(rest, 10, 64)
	if err != nil || checker.MessageID(id) != mid {
		return 0
	}
	return id
}

// spill keeps each chunk's report lines (or inbox rows) in a file of its
// own until the chunk is judged.
type spill[T any] struct {
	dir   string
	files []*os.File
	bufs  []*bufio.Writer
	encs  []*gob.Encoder
}

func newSpill[T any](n int) (*spill[T], error) {
	dir, err := os.MkdirTemp("", "outboxchaos-audit-")
	if err != nil {
		return nil, notJudged(fmt.Errorf("make a folder for the chunks: %w", err))
	}
	return &spill[T]{dir: dir, files: make([]*os.File, n), bufs: make([]*bufio.Writer, n), encs: make([]*gob.Encoder, n)}, nil
}

// add appends v to chunk i's file.
func (s *spill[T]) add(i int, v T) error {
	if s.encs[i] == nil {
		f, err := os.Create(filepath.Join(s.dir, fmt.Sprintf("chunk-%d", i)))
		if err != nil {
			return notJudged(fmt.Errorf("spill a chunk: %w", err))
		}
		s.files[i], s.bufs[i] = f, bufio.NewWriterSize(f, 16<<10)
		s.encs[i] = gob.NewEncoder(s.bufs[i])
	}
	if err := s.encs[i].Encode(v); err != nil {
		return notJudged(fmt.Errorf("spill a chunk: %w", err))
	}
	return nil
}

// items reads chunk i's values back, in the order they were added, and
// removes its file.
func (s *spill[T]) items(i int) ([]T, error) {
	f := s.files[i]
	if f == nil {
		return nil, nil
	}
	s.files[i] = nil
	defer func() { _ = f.Close(); _ = os.Remove(f.Name()) }()
	if err := s.bufs[i].Flush(); err != nil {
		return nil, notJudged(fmt.Errorf("spill a chunk: %w", err))
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return nil, notJudged(fmt.Errorf("read a chunk back: %w", err))
	}
	dec := gob.NewDecoder(bufio.NewReaderSize(f, 1<<16))
	var out []T
	for {
		var v T
		if err := dec.Decode(&v); errors.Is(err, io.EOF) {
			return out, nil
		} else if err != nil {
			return nil, notJudged(fmt.Errorf("read a chunk back: %w", err))
		}
		out = append(out, v)
	}
}

func (s *spill[T]) close() {
	for _, f := range s.files {
		if f != nil {
			_ = f.Close()
		}
	}
	_ = os.RemoveAll(s.dir)
}

// partitionReport reads the report file once and files each line under
// the chunk of the outbox row it counts for: by its refkey when that is a
// message_id of the design's form, else by the inbox row that carries the
// refkey, else by the outbox row its dedup key names (looked up in the
// snapshot, for the lines that need it), else the loose chunk.
func partitionReport(ctx context.Context, r *reader, chunks []chunk, o Options) (*spill[ReportLine], int, error) {
	sp, err := newSpill[ReportLine](len(chunks))
	if err != nil {
		return nil, 0, err
	}
	var unplaced []ReportLine
	n := 0
	err = scanReportFile(o, func(l ReportLine) error {
		n++
		if id := outboxIDOf(l.RefKey); id != 0 {
			return sp.add(of(chunks, id), l)
		}
		unplaced = append(unplaced, l)
		return nil
	})
	if err != nil {
		sp.close()
		return nil, 0, err
	}
	owner, err := r.owners(ctx, unplaced)
	if err != nil {
		sp.close()
		return nil, 0, err
	}
	for _, l := range unplaced {
		if err := sp.add(of(chunks, owner[l.RefKey+"\x00"+l.DedupKey]), l); err != nil {
			sp.close()
			return nil, 0, err
		}
	}
	return sp, n, nil
}

// scanReportFile reads the report file line by line (ScanReport), its
// format from the options or sniffed from the file.
func scanReportFile(o Options, emit func(ReportLine) error) error {
	f, err := os.Open(o.ReportPath)
	if err != nil {
		return notJudged(fmt.Errorf("read vendor report: %w", err))
	}
	defer f.Close()
	br := bufio.NewReaderSize(f, 1<<16)
	format := o.ReportFormat
	if format == "" {
		head, _ := br.Peek(512)
		format = sniff(o.ReportPath, head)
	}
	if err := ScanReport(br, format, o.Columns, emit); err != nil {
		var nj *NotJudgedError
		if errors.As(err, &nj) {
			return err
		}
		return notJudged(fmt.Errorf("vendor report %s: %w", o.ReportPath, err))
	}
	return nil
}

// owners looks up, for report lines whose refkey is not a message_id of
// the design's form, the outbox row each counts for (as Build attributes
// them): the inbox row with that message_id, else the outbox row of its
// dedup key. Keyed refkey NUL dedup key; a line of no row is absent.
func (r *reader) owners(ctx context.Context, lines []ReportLine) (map[string]int64, error) {
	out := map[string]int64{}
	if len(lines) == 0 {
		return out, nil
	}
	var refkeys, keys []string
	for _, l := range lines {
		refkeys = append(refkeys, l.RefKey)
		if l.DedupKey != "" {
			keys = append(keys, l.DedupKey)
		}
	}
	byMID, byKey := map[string]int64{}, map[string]int64{}
	collect := func(sql string, arg []string, into map[string]int64) error {
		rows, err := r.tx.Query(ctx, sql, arg)
		if err != nil {
			return notJudged(fmt.Errorf("look up the rows of report refkeys: %w", err))
		}
		var k string
		var id int64
		_, err = pgx.ForEachRow(rows, []any{&k, &id}, func() error { into[k] = id; return nil })
		if err != nil {
			return notJudged(fmt.Errorf("look up the rows of report refkeys: %w", err))
		}
		return nil
	}
	if err := collect(`SELECT message_id, coalesce(outbox_id, 0) FROM `+r.q.Names.from(r.q.Schema, "inbox")+` WHERE message_id = ANY($1)`, refkeys, byMID); err != nil {
		return nil, err
	}
	if err := collect(`SELECT dedup_key, id FROM `+r.q.Names.from(r.q.Schema, "outbox")+` WHERE dedup_key = ANY($1)`, keys, byKey); err != nil {
		return nil, err
	}
	for _, l := range lines {
		if _, ok := byMID[l.RefKey]; ok {
			out[l.RefKey+"\x00"+l.DedupKey] = byMID[l.RefKey]
		} else if id, ok := byKey[l.DedupKey]; ok && l.DedupKey != "" {
			out[l.RefKey+"\x00"+l.DedupKey] = id
		}
	}
	return out, nil
}

// assignAlerts files each alert under the chunk of the message it names:
// by its outbox id, its message_id, or the inbox row carrying that
// message_id; the others go to the loose chunk.
func (r *reader) assignAlerts(ctx context.Context, chunks []chunk, alerts []checker.AlertRecord) ([][]checker.AlertRecord, error) {
	out := make([][]checker.AlertRecord, len(chunks))
	var mids []string
	for _, a := range alerts {
		if a.OutboxID == 0 && outboxIDOf(a.MessageID) == 0 && a.MessageID != "" {
			mids = append(mids, a.MessageID)
		}
	}
	var lookup []ReportLine
	for _, m := range mids {
		lookup = append(lookup, ReportLine{RefKey: m})
	}
	owner, err := r.owners(ctx, lookup)
	if err != nil {
		return nil, err
	}
	for _, a := range alerts {
		id := a.OutboxID
		if id == 0 {
			id = outboxIDOf(a.MessageID)
		}
		if id == 0 {
			id = owner[a.MessageID+"\x00"]
		}
		i := of(chunks, id)
		out[i] = append(out[i], a)
	}
	return out, nil
}

// merge adds a chunk's result to r: counts summed, each invariant valid
// only if valid in every chunk, its findings in chunk order.
func (r *Result) merge(c Result) {
	r.Outbox += c.Outbox
	r.Inbox += c.Inbox
	r.Report += c.Report
	r.OutOfRange += c.OutOfRange
	r.Alerts += c.Alerts
	r.HasAlerts = c.HasAlerts
	r.Now = c.Now
	for k, v := range c.InFlight {
		if r.InFlight == nil {
			r.InFlight = map[string]string{}
		}
		r.InFlight[k] = v
	}
	if r.Fates == nil {
		r.Fates = map[checker.Fate]int{}
	}
	for f, n := range c.Fates {
		r.Fates[f] += n
	}
	if r.Invariants == nil {
		r.Invariants = c.Invariants
		return
	}
	for i, v := range c.Invariants {
		m := &r.Invariants[i]
		m.Valid = m.Valid && v.Valid
		m.Findings = append(m.Findings, v.Findings...)
		if m.Category == "" {
			m.Category = v.Category
		}
	}
}
