package branches

import (
	"fmt"
	"io"
	"sort"

	"golang.org/x/tools/cover"
)

// Map is which branches the runs reached.
type Map struct {
	Branches []Branch `json:"branches"`
	// Reached holds the IDs of the branches whose body ran at least once.
	Reached map[string]bool `json:"reached"`
	// Instrumented holds the files the profile covers: a branch in a file
	// it does not cover is neither reached nor missed.
	Instrumented map[string]bool `json:"-"`
	// Explained holds, by ID, the reason no fault can reach a branch
	// (unreachable.tsv), for the branches an entry names; nil: none read.
	Explained map[string]Reason `json:"-"`
	// Earlier holds the IDs of the branches earlier runs reached (the
	// exploration ledger's union, AddEarlier), whether or not m's own runs
	// did; nil: none known.
	Earlier map[string]bool `json:"-"`
}

// Explain attaches the reasons rs give (see Explain) and returns the
// entries' problems (stale, ambiguous, without a reason).
func (m *Map) Explain(rs []Reason) []error {
	var errs []error
	m.Explained, errs = Explain(m.Branches, rs)
	return errs
}

// ReadProfile parses a text coverage profile (`go tool covdata textfmt`).
func ReadProfile(r io.Reader) ([]*cover.Profile, error) {
	ps, err := cover.ParseProfilesFromReader(r)
	if err != nil {
		return nil, fmt.Errorf("parse coverage profile: %w", err)
	}
	return ps, nil
}

// Reach says which of bs the profiles reached: a branch is reached when a
// block inside its body has a count above zero.
func Reach(bs []Branch, ps []*cover.Profile) *Map {
	byFile := map[string]*cover.Profile{}
	for _, p := range ps {
		byFile[p.FileName] = p
	}
	m := &Map{Branches: bs, Reached: map[string]bool{}, Instrumented: map[string]bool{}}
	for f := range byFile {
		m.Instrumented[f] = true
	}
	for _, b := range bs {
		p := byFile[b.File]
		if p == nil {
			continue
		}
		for _, blk := range p.Blocks {
			start, end := Pos{blk.StartLine, blk.StartCol}, Pos{blk.EndLine, blk.EndCol}
			if blk.Count > 0 && !start.before(b.From) && !b.To.before(end) {
				m.Reached[b.ID()] = true
				break
			}
		}
	}
	return m
}

// Package is one package's branches: how many, how many this map's runs
// reached, how many were reached ever (by them or by earlier runs,
// Map.Earlier), and the ones never reached; these split into the ones with
// a reason no fault can reach them (Explained, by class) and the open
// ones, reachable by a fault but never reached (the fault search's to-do):
// Ever + len(Explained) + len(Open) = Total. Without earlier runs, Ever is
// Reached.
type Package struct {
	Pkg     string
	Total   int
	Reached int
	Ever    int
	// Missed are the branches this map's runs did not reach (some of them
	// maybe reached earlier).
	Missed    []Branch
	Explained []Branch
	Open      []Branch
	// ReachedListed are branches reached ever that unreachable.tsv says
	// no fault can reach: the reason is wrong (counted as reached).
	ReachedListed []Branch
}

// ByClass counts the package's explained branches by reason class.
func (p Package) ByClass(m *Map) map[string]int {
	out := map[string]int{}
	for _, b := range p.Explained {
		out[m.Explained[b.ID()].Class]++
	}
	return out
}

// ByPackage groups the instrumented branches by package, in import-path
// order.
func (m *Map) ByPackage() []Package {
	idx := map[string]int{}
	var out []Package
	for _, b := range m.Branches {
		if !m.Instrumented[b.File] {
			continue
		}
		i, ok := idx[b.Pkg]
		if !ok {
			i = len(out)
			idx[b.Pkg] = i
			out = append(out, Package{Pkg: b.Pkg})
		}
		out[i].Total++
		if m.Reached[b.ID()] {
			out[i].Reached++
		} else {
			out[i].Missed = append(out[i].Missed, b)
		}
		_, listed := m.Explained[b.ID()]
		switch {
		case m.Ever(b.ID()):
			out[i].Ever++
			if listed {
				out[i].ReachedListed = append(out[i].ReachedListed, b)
			}
		case listed:
			out[i].Explained = append(out[i].Explained, b)
		default:
			out[i].Open = append(out[i].Open, b)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Pkg < out[j].Pkg })
	return out
}

// Totals are the branches this map's runs reached (Earlier aside) and the
// instrumented ones, over every package.
func (m *Map) Totals() (reached, total int) {
	for _, p := range m.ByPackage() {
		reached += p.Reached
		total += p.Total
	}
	return reached, total
}

// Merge adds what o reached to m (the same branches, another run's
// profile), and returns the IDs o reached that m had not.
func (m *Map) Merge(o *Map) (fresh []string) {
	if m.Reached == nil {
		m.Reached = map[string]bool{}
	}
	if m.Instrumented == nil {
		m.Instrumented = map[string]bool{}
	}
	if m.Branches == nil {
		m.Branches = o.Branches
	}
	for f := range o.Instrumented {
		m.Instrumented[f] = true
	}
	for id := range o.Reached {
		if !m.Reached[id] {
			m.Reached[id] = true
			fresh = append(fresh, id)
		}
	}
	sort.Strings(fresh)
	return fresh
}
