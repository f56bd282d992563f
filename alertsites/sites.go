package alertsites

import (
	_ "embed"
	"fmt"
	"strings"
)

// File is the map's path in the repository.
const File = "alertsites/sites.tsv"

//go:embed sites.tsv
var sitesTSV string

// Entry is one line of sites.tsv: an alert call and the crash workloads
// that reach it.
type Entry struct {
	Line      int
	File      string // under system/
	Func      string
	Kind      string
	Process   string   // the crash process that sends it
	Workloads []string // none: no workload reaches it (Change says why)
	Change    string
}

// Key names the entry's call as Site.Key does.
func (e Entry) Key() string { return e.File + " " + e.Func + " " + e.Kind }

// Entries parses the committed sites.tsv.
func Entries() ([]Entry, error) { return Parse(sitesTSV) }

// Parse parses the text of a sites file: one tab-separated entry a line
// (file, function, kind, process, workloads, change), # comments and
// blank lines skipped.
func Parse(text string) ([]Entry, error) {
	var out []Entry
	for i, l := range strings.Split(text, "\n") {
		if strings.TrimSpace(l) == "" || strings.HasPrefix(l, "#") {
			continue
		}
		f := strings.Split(l, "\t")
		if len(f) != 6 {
			return nil, fmt.Errorf("%s line %d: %d tab-separated fields, want 6 (file, function, kind, process, workloads, change)", File, i+1, len(f))
		}
		e := Entry{Line: i + 1, File: f[0], Func: f[1], Kind: f[2], Process: f[3], Change: f[5]}
		if f[4] != "-" {
			e.Workloads = strings.Split(f[4], ",")
		}
		out = append(out, e)
	}
	return out, nil
}

// Workloads lists every workload the map names, each once, in the map's
// order.
func Workloads(es []Entry) []string {
	var out []string
	seen := map[string]bool{}
	for _, e := range es {
		for _, w := range e.Workloads {
			if !seen[w] {
				seen[w] = true
				out = append(out, w)
			}
		}
	}
	return out
}
