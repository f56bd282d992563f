package relay

import (
	"strings"
	"testing"

	"github.com/outboxchaos/outboxchaos/system/canary"
)

// TestCanaryStatementsDifferOnlyWhereMeant: each canary statement is its
// real statement with exactly the intended edit, so a change to the real
// one that is not carried into the variant fails here instead of silently
// disarming the canary.
func TestCanaryStatementsDifferOnlyWhereMeant(t *testing.T) {
	t.Parallel()
	const mine, anyClaimer = "AND claimed_by = $2", "AND $2::text IS NOT NULL"
	for _, tc := range []struct {
		name, real, variant string
		edits               [][2]string // each old text must occur exactly once
	}{
		{"no-skip-locked claim", ClaimSQL, claimSQLNoSkipLocked, [][2]string{
			{"\n\t               FOR UPDATE SKIP LOCKED))", "))"},
			{"\n\t   AND status = 'PENDING'", ""},
		}},
		{"recent-only claim", ClaimSQL, claimSQLRecentOnly, [][2]string{
			{"next_attempt_at <= $3", "next_attempt_at <= $3 AND created_at >= $5"},
		}},
		{"newest-first claim", ClaimSQL, claimSQLNewestFirst, [][2]string{
			{"ORDER BY next_attempt_at, id", "ORDER BY next_attempt_at DESC, id DESC"},
		}},
		{"no-claimed-by mark", MarkSQL, markSQLAnyClaimer, [][2]string{{mine, anyClaimer}}},
		{"no-claimed-by finish", finishSQL, finishSQLAnyClaimer, [][2]string{{mine, anyClaimer}}},
		{"no-claimed-by defer", deferSQL, deferSQLAnyClaimer, [][2]string{{mine, anyClaimer}}},
		{"no-claimed-by fail", failSQL, failSQLAnyClaimer, [][2]string{{mine, anyClaimer}}},
	} {
		got := tc.real
		for _, e := range tc.edits {
			if n := strings.Count(got, e[0]); n != 1 {
				t.Errorf("%s: %q occurs %d times in the real statement, want once", tc.name, e[0], n)
			}
			got = strings.Replace(got, e[0], e[1], 1)
		}
		if got != tc.variant {
			t.Errorf("%s: the variant is not the real statement with its edits:\nwant %q\ngot  %q", tc.name, got, tc.variant)
		}
	}
}

// TestStatementsFor: no canary means the real statements; each relay SQL
// canary swaps exactly its own.
func TestStatementsFor(t *testing.T) {
	t.Parallel()
	real := statements{claim: ClaimSQL, mark: MarkSQL, finish: finishSQL, deferAd: deferSQL, fail: failSQL}
	want := map[string]statements{
		canary.NoSkipLocked: {claim: claimSQLNoSkipLocked, mark: MarkSQL, finish: finishSQL, deferAd: deferSQL, fail: failSQL},
		canary.RecentOnly:   {claim: claimSQLRecentOnly, claimWindow: true, mark: MarkSQL, finish: finishSQL, deferAd: deferSQL, fail: failSQL},
		canary.NewestFirst:  {claim: claimSQLNewestFirst, mark: MarkSQL, finish: finishSQL, deferAd: deferSQL, fail: failSQL},
		canary.NoClaimedBy: {claim: ClaimSQL, mark: markSQLAnyClaimer, finish: finishSQLAnyClaimer,
			deferAd: deferSQLAnyClaimer, fail: failSQLAnyClaimer},
	}
	for _, bug := range append([]string{""}, canary.Names...) {
		w, ok := want[bug]
		if !ok {
			w = real
		}
		if got := statementsFor(bug); got != w {
			t.Errorf("statementsFor(%q) = %+v, want %+v", bug, got, w)
		}
	}
	for _, s := range []string{real.mark, real.finish, real.deferAd, real.fail} {
		if !strings.Contains(s, "claimed_by = $2") {
			t.Errorf("a write after the claim is not conditional on the lease: %s", s)
		}
	}
}

// TestWithLookups_KeepsEachClaimWhole: the relay sends each claim variant
// (the real one and each canary's) inside withLookups unchanged, as the one
// statement, with the number lookup outside production only.
func TestWithLookups_KeepsEachClaimWhole(t *testing.T) {
	t.Parallel()
	for _, claim := range []string{ClaimSQL, claimSQLNoSkipLocked, claimSQLRecentOnly} {
		for _, production := range []bool{false, true} {
			got := withLookups(claim, production)
			if strings.Count(got, claim) != 1 || !strings.HasPrefix(strings.TrimSpace(got), "WITH claimed AS (") {
				t.Errorf("production %v: the claim is not wrapped whole:\n%s", production, got)
			}
			if strings.Contains(got, "registered_numbers") == production {
				t.Errorf("production %v: registered-number lookup present = %v", production, !production)
			}
		}
	}
	if ClaimWithLookupsSQL != withLookups(ClaimSQL, true) {
		t.Error("ClaimWithLookupsSQL is not ClaimSQL as a production relay sends it")
	}
}
