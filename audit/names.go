package audit

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/jackc/pgx/v5"
)

// Names maps the design's table and column names to those of a schema
// that differs: "outbox", "inbox" and "members" name tables, and
// "outbox.created_at" (any table's column) a column. A name not mapped is
// the design's. The outbox's member and phone are read from its payload
// (payload->>'member_id', payload->>'phone') unless "outbox.member_id" or
// "outbox.phone" name columns of their own.
type Names map[string]string

// The tables the audit reads, by their short names, with the design's
// names and the columns it reads of each.
var designTables = map[string]struct {
	table   string
	columns []string
}{
	"outbox": {OutboxTable, []string{"id", "dedup_key", "kind", "status", "status_reason", "attempts", "payload", "member_id", "phone",
		"next_attempt_at", "claimed_by", "claimed_until", "created_at", "updated_at", "published_at"}},
	"inbox": {InboxTable, []string{"id", "message_id", "outbox_id", "dedup_key", "kind", "phone", "status", "vendor_code", "error",
		"created_at", "updated_at", "settled", "resends"}},
	"members": {MembersTable, []string{"id", "sms_consent", "active"}},
}

// ParseNames reads a mapping "outbox=my_outbox,outbox.created_at=inserted_at,…".
func ParseNames(s string) (Names, error) {
	n := Names{}
	if strings.TrimSpace(s) == "" {
		return n, nil
	}
	for _, kv := range strings.Split(s, ",") {
		k, v, ok := strings.Cut(strings.TrimSpace(kv), "=")
		k, v = strings.TrimSpace(k), strings.TrimSpace(v)
		if !ok || k == "" || v == "" {
			return nil, fmt.Errorf("%q: want table=name or table.column=name", kv)
		}
		tbl, col, isCol := strings.Cut(k, ".")
		t, known := designTables[tbl]
		switch {
		case !known:
			return nil, fmt.Errorf("%q: unknown table %q (%s)", kv, tbl, strings.Join(sortedKeys(), ", "))
		case isCol && !slices.Contains(t.columns, col):
			return nil, fmt.Errorf("%q: the audit reads no column %q of %s (%s)", kv, col, tbl, strings.Join(t.columns, ", "))
		}
		if _, dup := n[k]; dup {
			return nil, fmt.Errorf("%q: %s mapped twice", kv, k)
		}
		n[k] = v
	}
	return n, nil
}

func sortedKeys() []string {
	var out []string
	for k := range designTables {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// table is the schema's own table behind short name t, quoted.
func (n Names) table(schema, t string) string {
	name := designTables[t].table
	if v := n[t]; v != "" {
		name = v
	}
	return pgx.Identifier{schema, name}.Sanitize()
}

// display is the table's name as a message says it.
func (n Names) display(schema, t string) string {
	if v := n[t]; v != "" {
		return schema + "." + v
	}
	return schema + "." + designTables[t].table
}

// from is what a query reads table t from: the table itself when none of
// its columns is mapped, else a subquery that gives the schema's columns
// the design's names (PostgreSQL folds it into the query, so an index on
// a mapped column still serves).
func (n Names) from(schema, t string) string {
	tbl := n.table(schema, t)
	cols := designTables[t].columns
	mapped := false
	for _, c := range cols {
		if n[t+"."+c] != "" {
			mapped = true
		}
	}
	if !mapped {
		return tbl
	}
	col := func(c string) string {
		if v := n[t+"."+c]; v != "" {
			return pgx.Identifier{v}.Sanitize()
		}
		return pgx.Identifier{c}.Sanitize()
	}
	var sel []string
	for _, c := range cols {
		switch {
		case t == "outbox" && (c == "member_id" || c == "phone"):
			continue // read from the payload, or folded into it below
		case t == "outbox" && c == "payload" && (n["outbox.member_id"] != "" || n["outbox.phone"] != ""):
			member, phone := col("payload")+"->'member_id'", col("payload")+"->'phone'"
			if n["outbox.member_id"] != "" {
				member = "to_jsonb(" + col("member_id") + ")"
			}
			if n["outbox.phone"] != "" {
				phone = "to_jsonb(" + col("phone") + ")"
			}
			sel = append(sel, fmt.Sprintf("jsonb_build_object('member_id', %s, 'phone', %s) AS payload", member, phone))
			continue
		}
		sel = append(sel, col(c)+" AS "+pgx.Identifier{c}.Sanitize())
	}
	return "(SELECT " + strings.Join(sel, ", ") + " FROM " + tbl + ") AS " + pgx.Identifier{designTables[t].table}.Sanitize()
}
