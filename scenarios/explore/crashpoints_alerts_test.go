package explore

import (
	"slices"
	"strings"
	"testing"

	"github.com/outboxchaos/outboxchaos/alertsites"
	"github.com/outboxchaos/outboxchaos/system/crashpoint"
)

// An alert's window runs from the last durable write before its post to
// the first one after it: a cleanup that turns a row ERROR and then
// alerts, and a reconciler that alerts and then writes its settlement,
// are both separated from their alert by a point of the window; reads and
// the work of other messages outside it are not.
func TestAlertWindows(t *testing.T) {
	t.Parallel()
	trace := func(names ...string) []crashpoint.Point {
		var out []crashpoint.Point
		for _, n := range names {
			i := strings.LastIndexByte(n, ':')
			out = append(out, crashpoint.Point{Step: n[:i], Side: crashpoint.Side(n[i+1:]), Hit: 1})
		}
		return out
	}
	names := func(ps []crashpoint.Point) []string {
		var out []string
		for _, p := range ps {
			out = append(out, p.Step+":"+string(p.Side))
		}
		return out
	}
	writeFirst := trace("sql:select-aa:before", "sql:select-aa:after", "sql:update-bb:before", "sql:update-bb:after",
		"http:alert-alerts:before", "http:alert-alerts:after", "sql:select-cc:before", "sql:update-dd:before", "sql:update-dd:after")
	want := []string{"http:alert-alerts:after", "http:alert-alerts:before", "sql:select-cc:before", "sql:update-bb:after", "sql:update-dd:before"}
	if got := names(alertWindows(writeFirst)); !slices.Equal(got, want) {
		t.Errorf("write, then alert:\n got %v\nwant %v", got, want)
	}
	alertFirst := trace("http:vendor-report:before", "http:vendor-report:after", "http:alert-alerts:before", "http:alert-alerts:after",
		"sql:begin:before", "sql:begin:after", "sql:with-ee:before")
	want = []string{"http:alert-alerts:after", "http:alert-alerts:before", "sql:begin:after", "sql:begin:before", "sql:with-ee:before"}
	if got := names(alertWindows(alertFirst)); !slices.Equal(got, want) {
		t.Errorf("alert, then write:\n got %v\nwant %v", got, want)
	}
	if got := alertWindows(trace("sql:update-bb:before", "sql:update-bb:after")); len(got) != 0 {
		t.Errorf("no alert, window %v", got)
	}
}

// Every workload the alert map names is a crash workload.
func TestAlertMapWorkloadsExist(t *testing.T) {
	t.Parallel()
	es, err := alertsites.Entries()
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range alertsites.Workloads(es) {
		if _, ok := LookupCrashWorkload(name); !ok {
			t.Errorf("%s names workload %q, which is not a crash workload", alertsites.File, name)
		}
	}
}
