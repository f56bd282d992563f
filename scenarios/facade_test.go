package scenarios

import (
	"context"
	"strings"
	"testing"

	"github.com/outboxchaos/outboxchaos/scenarios/catalogue"
)

// A run whose database does not answer is not judged: ERROR, never FAIL,
// and it says which service.
func TestRunWithoutDatabase_NotJudged(t *testing.T) {
	t.Parallel()
	s, _ := catalogue.Lookup("confirm-timeout")
	r := Run(context.Background(), s, unreachable())
	if r.Outcome() != OutcomeError || r.NotJudged == nil || !strings.Contains(r.NotJudged.Error(), "Postgres at") || !strings.Contains(r.NotJudged.Error(), "unreachable") {
		t.Fatalf("outcome %s, not judged %v, err %v", r.Outcome(), r.NotJudged, r.Err)
	}
}

// unreachable is options whose Postgres does not answer.
func unreachable() Options {
	o := DefaultOptions()
	o.PGURL, o.Artifacts = "postgres://postgres@127.0.0.1:1/test?sslmode=disable", ""
	return o
}
