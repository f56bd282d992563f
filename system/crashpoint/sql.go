package crashpoint

import (
	"context"
	"fmt"
	"hash/fnv"
	"strings"
	"sync"

	"github.com/jackc/pgx/v5"
)

// Tracer is a pgx.QueryTracer that makes both sides of every statement a
// crash point (pgx runs begin, commit and rollback as statements too). Set
// it as the ConnConfig.Tracer of every pool and connection a process opens.
type Tracer struct{}

type stepKey struct{}

// TraceQueryStart is the "before" side of the statement.
func (Tracer) TraceQueryStart(ctx context.Context, _ *pgx.Conn, data pgx.TraceQueryStartData) context.Context {
	if !on.Load() {
		return ctx
	}
	step, ok := SQLStep(data.SQL)
	if !ok {
		return ctx
	}
	Reach(step, Before)
	return context.WithValue(ctx, stepKey{}, step)
}

// TraceQueryEnd is the "after" side: the statement's answer has arrived
// (for a commit: the transaction is durable).
func (Tracer) TraceQueryEnd(ctx context.Context, _ *pgx.Conn, _ pgx.TraceQueryEndData) {
	if step, ok := ctx.Value(stepKey{}).(string); ok {
		Reach(step, After)
	}
}

var stepNames sync.Map // SQL text → step name

// SQLStep names the step of a statement: "sql:<verb>-<hash>" (the verb is
// the statement's first word, the hash six hex digits of its normalised
// text), or "sql:begin", "sql:commit", "sql:rollback", "sql:savepoint",
// "sql:release" for transaction control. A pgx ping ("-- ping") is no step.
func SQLStep(sql string) (string, bool) {
	if v, ok := stepNames.Load(sql); ok {
		s := v.(string)
		return s, s != ""
	}
	norm := strings.Join(strings.Fields(sql), " ")
	name := ""
	if norm != "" && !strings.HasPrefix(norm, "--") {
		verb := strings.ToLower(strings.Fields(norm)[0])
		verb = strings.TrimFunc(verb, func(r rune) bool { return r < 'a' || r > 'z' })
		switch verb {
		case "begin", "commit", "rollback", "savepoint", "release", "end":
			name = "sql:" + verb
		default:
			if verb == "" {
				verb = "stmt"
			}
			h := fnv.New32a()
			_, _ = h.Write([]byte(norm))
			name = fmt.Sprintf("sql:%s-%06x", verb, h.Sum32()&0xffffff)
		}
	}
	stepNames.Store(sql, name)
	return name, name != ""
}
