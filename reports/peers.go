package reports

import (
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/outboxchaos/outboxchaos/checker"
	"github.com/outboxchaos/outboxchaos/history"
	"github.com/outboxchaos/outboxchaos/peers"
	"github.com/outboxchaos/outboxchaos/scenarios"
	"github.com/outboxchaos/outboxchaos/scenarios/scenario"
)

// PeerImpl is one relay under test and every setting it was run with.
type PeerImpl struct {
	Name     string   `json:"name"`
	Settings []string `json:"settings"` // "name=value<TAB>why"
	// Features and Deadlines are what the peer declares in the registry
	// (peers.Peer), which decide the cases that apply to it.
	Features peers.Features `json:"features"`
	// Command is a relay given as a command line (the process contract);
	// "" for a registered peer.
	Command   string           `json:"command,omitempty"`
	Deadlines []peers.Deadline `json:"deadlines,omitempty"`
}

// PeerCell is one implementation × case: what make peers keeps of the run
// (saved as JSON, so the report can be rendered again without re-running).
type PeerCell struct {
	Impl string `json:"impl"`
	Case string `json:"case"`
	// NA says why the case does not apply ("" when it ran).
	NA      string          `json:"na,omitempty"`
	Seed    int64           `json:"seed,omitempty"`
	Seconds float64         `json:"seconds,omitempty"`
	Verdict checker.Verdict `json:"verdict"`
	Err     string          `json:"err,omitempty"` // a rule, an unfired fault, or a step that failed
	// NotJudged is why the run was not judged (ERROR), if it was not: it
	// is then neither a pass nor a violation.
	NotJudged string `json:"not_judged,omitempty"`
	// Copies: messages a worker received more than once (from the
	// history); Timeline: the run's notable lines (the last 40).
	Copies   int    `json:"copies"`
	Timeline string `json:"timeline,omitempty"`
	// Layers is where the run's duplicates were stopped, from the history
	// (shown for a peer with JetStream).
	Layers *Layers `json:"layers,omitempty"`
	// Fired and Unfired are the run's faults ("kind target") that met the
	// pipeline and those that never did: a cell whose faults did not fire
	// judged a run without them.
	Fired   []string `json:"fired,omitempty"`
	Unfired []string `json:"unfired,omitempty"`
}

// NewPeerCell keeps what the report needs of a run.
func NewPeerCell(impl, name string, r scenarios.Result) PeerCell {
	c := PeerCell{Impl: impl, Case: name, Seed: r.Seed, Seconds: r.Duration.Seconds(), Verdict: r.Verdict,
		Copies: checker.Copies(r.Events), Timeline: excerpt(r.Timeline, 40)}
	c.Layers = NewLayers(r.Events, c.Copies, r.Verdict.Duplicated)
	for _, f := range r.Faults {
		name := f.Kind + " " + f.Target
		if f.Fired {
			c.Fired = append(c.Fired, name)
		} else {
			c.Unfired = append(c.Unfired, name)
		}
	}
	if r.Err != nil {
		c.Err = r.Err.Error()
	}
	if r.NotJudged != nil {
		c.NotJudged = r.NotJudged.Error()
	}
	return c
}

// firedMark is " ⚡k/n" for a run with n recorded faults, k of them fired.
func (c PeerCell) firedMark() string {
	n := len(c.Fired) + len(c.Unfired)
	if n == 0 {
		return ""
	}
	return fmt.Sprintf(" ⚡%d/%d", len(c.Fired), n)
}

// writeUnfired lists the judged cells with a fault that never met the
// pipeline, and which.
func (p Peers) writeUnfired(f func(string, ...any)) {
	var lines []string
	for _, c := range p.Cells {
		if c.NA == "" && c.NotJudged == "" && len(c.Unfired) > 0 {
			lines = append(lines, fmt.Sprintf("- `%s` × `%s`: %s did not fire (fired: %s)\n", c.Impl, c.Case,
				strings.Join(c.Unfired, ", "), orNone(strings.Join(c.Fired, ", "))))
		}
	}
	if len(lines) == 0 {
		return
	}
	f("### Faults that did not fire\n\nA random case may draw a fault its run never meets (a kill-point past the run's last batch, a link fault after the last message); the cell judged the run without it.\n\n%s\n", strings.Join(lines, ""))
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}

// BrokerCopies counts messages a worker received more than once: copies
// the relay put on the broker, which the inbox absorbs.
func (c PeerCell) BrokerCopies() int { return c.Copies }

// Violation reports whether the run broke the contract or could not
// finish its steps. A run not judged is none.
func (c PeerCell) Violation() bool {
	return c.NA == "" && c.NotJudged == "" && (c.Err != "" || !c.Verdict.OK())
}

// Finding is the classification of one violation, written after reading
// its run: a bug in the peer, a documented limitation, or a mistake of our
// adapter, how that was told, and the standalone program that shows it.
type Finding struct {
	Class   string // "bug in the peer", "documented limitation", "adapter mistake", "harness"
	How     string
	Program string // path under reports/peers/, "" if none
}

// Peers is everything PEERS.md shows.
// It is saved as JSON (reports/peers/matrix.json) so the report can be
// rendered again, with revised findings, without re-running.
type Peers struct {
	Env      Environment          `json:"env"`
	Impls    []PeerImpl           `json:"impls"`
	Cases    []*scenario.Scenario `json:"cases"`
	Cells    []PeerCell           `json:"cells"`
	Findings map[string]Finding   `json:"-"` // by "impl/case"; from PeerFindings at render time
	Command  string               `json:"command"`
}

// SetImpl adds im, or replaces the implementation of the same name.
func (p *Peers) SetImpl(im PeerImpl) {
	for i := range p.Impls {
		if p.Impls[i].Name == im.Name {
			p.Impls[i] = im
			return
		}
	}
	p.Impls = append(p.Impls, im)
}

// SetCell adds c, or replaces the cell of the same implementation and case.
func (p *Peers) SetCell(c PeerCell) {
	for i := range p.Cells {
		if p.Cells[i].Impl == c.Impl && p.Cells[i].Case == c.Case {
			p.Cells[i] = c
			return
		}
	}
	p.Cells = append(p.Cells, c)
}

func (p Peers) cell(impl, name string) (PeerCell, bool) {
	for _, c := range p.Cells {
		if c.Impl == impl && c.Case == name {
			return c, true
		}
	}
	return PeerCell{}, false
}

// Write renders PEERS.md.
func (p Peers) Write(w io.Writer) error {
	var b strings.Builder
	f := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	f("# Relays under test: ours beside Watermill's forwarder, River, the JetStream system, the send-then-record design and relays of other languages\n\n")
	f("Generated by `%s` on this machine; do not edit by hand.\n\n%s", p.Command, p.Env.Table())
	f("Every cell is one run of a peer case (`scenarios/catalogue/peers.go`) against one relay, judged by the same worker, inbox and checker. ")
	f("Columns: **delivered** once at the handset / **dup@broker** messages a worker received more than once (the inbox absorbs them) / ")
	f("**dup@handset** messages that reached a phone twice / **lost silently** / **stuck** (owed, not delivered, or the run did not settle). ")
	f("A cell is a violation (✗) when the contract broke (dup@handset, lost silently, stuck) or the run could not finish its steps.\n\n")
	f("A cell not judged (?) is a run the harness or a service failed: it neither kept nor broke the contract, and its counts are left out.\n\n")
	f("## Summary\n\n| implementation | cells run | violations | not judged | dup@broker (sum) | dup@handset | lost silently | stuck |\n|---|---|---|---|---|---|---|---|\n")
	for _, im := range p.Impls {
		var run, bad, errored, copies, dup, lost, stuck int
		for _, c := range p.Cells {
			if c.Impl != im.Name || c.NA != "" {
				continue
			}
			run++
			if c.NotJudged != "" {
				errored++
				continue
			}
			if c.Violation() {
				bad++
			}
			copies += c.BrokerCopies()
			dup += c.Verdict.Duplicated
			lost += c.Verdict.LostSilently
			stuck += c.Verdict.Stuck
		}
		f("| %s | %d | %d | %d | %d | %d | %d | %d |\n", im.Name, run, bad, errored, copies, dup, lost, stuck)
	}
	f("\nA violation is classified by hand (`reports/peer_findings.go`) after reading its run: a **bug in the peer** when the same adapter and case pass on another version of the peer or the window reproduces without our adapter (a standalone program under `reports/peers/`), a **documented limitation** when the peer's documentation names the behaviour, an **adapter mistake** when changing only our adapter removes it.\n\n")
	f("## Matrix\n\n| case |")
	for _, im := range p.Impls {
		f(" %s |", im.Name)
	}
	f("\n|---|")
	for range p.Impls {
		f("---|")
	}
	f("\n")
	for _, s := range p.Cases {
		f("| `%s` |", s.Name)
		for _, im := range p.Impls {
			c, ok := p.cell(im.Name, s.Name)
			switch {
			case !ok:
				f(" – |")
			case c.NA != "":
				f(" n/a |")
			case c.NotJudged != "":
				f(" ? not judged |")
			default:
				v := c.Verdict
				mark := "✓"
				if c.Violation() {
					mark = "✗"
				}
				f(" %s %d / %d / %d / %d / %d%s |", mark, v.DeliveredOnce, c.BrokerCopies(), v.Duplicated, v.LostSilently, v.Stuck, c.firedMark())
			}
		}
		f("\n")
	}
	f("\nCell: delivered / dup@broker / dup@handset / lost silently / stuck; ⚡k/n: k of the run's n faults met the pipeline (none shown: the case puts in no fault, or the cell was run before faults were recorded).\n\n")
	p.writeUnfired(f)
	f("### Not applicable\n\n")
	for _, c := range p.Cells {
		if c.NA != "" {
			f("- `%s` × `%s`: %s\n", c.Impl, c.Case, c.NA)
		}
	}
	p.writeLayers(f)
	f("\n## Cases\n\n| case | fault | expected |\n|---|---|---|\n")
	for _, s := range p.Cases {
		f("| `%s` | %s | %s |\n", s.Name, s.Fault, s.Outcome)
	}
	p.writeViolations(f)
	p.writeNotable(f)
	f("\n## Versions and settings\n\n")
	for _, im := range p.Impls {
		f("### %s\n\n", im.Name)
		f("Declared features: kill-points %s; publishes to RabbitMQ: %v; logs publish outcomes: %v", strings.Join(im.Features.KillPoints, ", "), im.Features.Broker, im.Features.PublishEvents)
		if len(im.Features.Windows) > 0 {
			f("; windows: %s", strings.Join(im.Features.Windows, ", "))
		}
		if im.Features.Consumer {
			f("; its own consumer replaces our worker")
		}
		if js := im.Features.JetStream; js != nil {
			f("; publishes to the run's own JetStream (stream %s)", js.Stream)
		}
		f(".\n\n")
		if len(im.Deadlines) > 0 {
			f("| deadline | value (as run) | why |\n|---|---|---|\n")
			for _, d := range im.Deadlines {
				f("| %s | %s | %s |\n", d.Name, d.Value, d.Why)
			}
			f("\n")
		}
		f("| setting | value | why |\n|---|---|---|\n")
		for _, s := range im.Settings {
			parts := strings.SplitN(s, "\t", 2)
			nv := strings.SplitN(parts[0], "=", 2)
			why := ""
			if len(parts) == 2 {
				why = parts[1]
			}
			if len(nv) == 2 {
				f("| %s | %s | %s |\n", nv[0], strings.ReplaceAll(nv[1], "|", "\\|"), why)
			}
		}
		f("\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func (p Peers) writeViolations(f func(string, ...any)) {
	f("\n## Violations\n\n")
	n := 0
	for _, c := range p.Cells {
		if !c.Violation() {
			continue
		}
		n++
		f("### `%s` × `%s`\n\n", c.Impl, c.Case)
		f("- verdict: `%s`\n", c.Verdict)
		if c.Err != "" {
			f("- run: %s\n", strings.ReplaceAll(c.Err, "\n", "; "))
		}
		f("- reproduce: %s\n", p.reproduce(c.Impl, c.Case, c.Seed))
		if fd, ok := p.Findings[c.Impl+"/"+c.Case]; ok {
			f("- classification: **%s**. %s\n", fd.Class, fd.How)
			if fd.Program != "" {
				f("- standalone program: [`%s`](%s)\n", fd.Program, strings.TrimPrefix(fd.Program, "reports/"))
			}
		} else {
			f("- classification: not yet classified (read the timeline and the record under artifacts/runs/)\n")
		}
		for _, d := range c.Verdict.Details {
			f("- %s\n", d)
		}
		f("\n```\n%s```\n\n", excerpt(c.Timeline, 30))
	}
	if n == 0 {
		f("None: every applicable cell kept the contract.\n")
	}
	first := true
	for _, c := range p.Cells {
		if c.NA != "" || c.NotJudged == "" {
			continue
		}
		if first {
			f("\nNot judged (run them again):\n\n")
			first = false
		}
		f("- `%s` × `%s`: %s — %s\n", c.Impl, c.Case, strings.ReplaceAll(c.NotJudged, "\n", "; "), p.reproduce(c.Impl, c.Case, c.Seed))
	}
}

// writeNotable lists cells that kept the contract but differ from ours in
// a way the matrix shows (copies at the broker), with their findings.
func (p Peers) writeNotable(f func(string, ...any)) {
	var keys []string
	for k := range p.Findings {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	first := true
	for _, k := range keys {
		impl, name, _ := strings.Cut(k, "/")
		c, ok := p.cell(impl, name)
		if !ok || c.Violation() || c.NA != "" {
			continue
		}
		if first {
			f("\n## Findings that kept the contract\n\n")
			first = false
		}
		fd := p.Findings[k]
		f("### `%s` × `%s`: %d copies at the broker\n\n- classification: **%s**. %s\n", impl, name, c.BrokerCopies(), fd.Class, fd.How)
		f("- reproduce: %s\n", p.reproduce(impl, name, c.Seed))
		if fd.Program != "" {
			f("- standalone program: [`%s`](%s)\n", fd.Program, strings.TrimPrefix(fd.Program, "reports/"))
		}
		f("\n```\n%s```\n\n", excerpt(c.Timeline, 30))
	}
}

// reproduce is the command that runs one cell again: a relay given as a
// command line is described again by peers --relay-cmd.
func (p Peers) reproduce(impl, name string, seed int64) string {
	for _, im := range p.Impls {
		if im.Name == impl && im.Command != "" {
			return fmt.Sprintf("`bin/outboxchaos peers --relay-cmd \"%s\" --relay-name %s --cases %s --seed %d` (after `make peer-bins`)", im.Command, impl, name, seed)
		}
	}
	return fmt.Sprintf("`bin/outboxchaos scenario run %s --impl %s --seed %d -v` (after `make peer-bins`)", name, impl, seed)
}

// excerpt keeps the notable lines of a timeline, at most n (the last ones).
func excerpt(tl string, n int) string {
	var keep []string
	for _, l := range strings.Split(strings.TrimRight(tl, "\n"), "\n") {
		if scenarios.Notable(l) || strings.Contains(l, "rescue") || strings.Contains(l, history.RaceCompleted) {
			keep = append(keep, l)
		}
	}
	if len(keep) > n {
		keep = append([]string{"…"}, keep[len(keep)-n:]...)
	}
	return strings.Join(keep, "\n") + "\n"
}
