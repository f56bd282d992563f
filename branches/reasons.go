package branches

import (
	_ "embed"
	"fmt"
	"path"
	"slices"
	"strings"
)

// The classes of reason a branch cannot be reached by a fault
// (unreachable.tsv explains each).
const (
	ClassInput     = "input"
	ClassNotInPods = "not-in-pods"
	ClassDefensive = "defensive"
	ClassNoFault   = "no-fault"
	ReasonsFile    = "branches/unreachable.tsv"
)

// Classes are the known reason classes, in the report's order.
var Classes = []string{ClassInput, ClassNotInPods, ClassDefensive, ClassNoFault}

//go:embed unreachable.tsv
var reasonsTSV string

// Reason is one entry of unreachable.tsv: the branches it names and why no
// fault can reach them.
type Reason struct {
	Line   int    // in the file
	File   string // under system/, a path.Match pattern
	Func   string // "*": every function
	Guard  string // a piece of Branch.Guard; "*": every branch
	Class  string
	Reason string
}

// Reasons parses the committed unreachable.tsv.
func Reasons() ([]Reason, error) { return ParseReasons(reasonsTSV) }

// ParseReasons parses the text of a reasons file: one tab-separated entry
// a line (file, function, guard, class, reason), # comments and blank
// lines skipped.
func ParseReasons(text string) ([]Reason, error) {
	var out []Reason
	for i, l := range strings.Split(text, "\n") {
		if strings.TrimSpace(l) == "" || strings.HasPrefix(l, "#") {
			continue
		}
		f := strings.Split(l, "\t")
		if len(f) != 5 {
			return nil, fmt.Errorf("%s line %d: %d tab-separated fields, want 5 (file, function, guard, class, reason)", ReasonsFile, i+1, len(f))
		}
		for j := range f {
			f[j] = strings.TrimSpace(f[j])
		}
		r := Reason{Line: i + 1, File: f[0], Func: f[1], Guard: strings.Join(strings.Fields(f[2]), " "), Class: f[3], Reason: f[4]}
		if _, err := path.Match(r.File, ""); err != nil {
			return nil, fmt.Errorf("%s line %d: file pattern %q: %w", ReasonsFile, r.Line, r.File, err)
		}
		out = append(out, r)
	}
	return out, nil
}

// Matches says whether r names b; sysRel is b's file under system/.
func (r Reason) Matches(b Branch, sysRel string) bool {
	if ok, _ := path.Match(r.File, sysRel); !ok {
		return false
	}
	if r.Func != "*" && r.Func != b.Func {
		return false
	}
	return r.Guard == "*" || strings.Contains(b.Guard, r.Guard)
}

// SystemRel is a branch file's path under system/ ("sms/token.go").
func SystemRel(file string) string {
	if i := strings.Index(file, "/system/"); i >= 0 {
		return file[i+len("/system/"):]
	}
	return file
}

// Explain maps each branch of bs that an entry of rs names to that entry.
// It returns an error for each entry that matches no branch (stale), whose
// guard matches more than one branch (ambiguous: name the branch with more
// of its guard, or use * for all of them), that has no class of Classes or
// no reason, and for each branch two entries name.
func Explain(bs []Branch, rs []Reason) (map[string]Reason, []error) {
	out := map[string]Reason{}
	var errs []error
	for _, r := range rs {
		if !slices.Contains(Classes, r.Class) {
			errs = append(errs, fmt.Errorf("%s line %d: unknown class %q (known: %s)", ReasonsFile, r.Line, r.Class, strings.Join(Classes, ", ")))
		}
		if r.Reason == "" {
			errs = append(errs, fmt.Errorf("%s line %d: no reason", ReasonsFile, r.Line))
		}
		var hit []Branch
		for _, b := range bs {
			if r.Matches(b, SystemRel(b.File)) {
				hit = append(hit, b)
			}
		}
		switch {
		case len(hit) == 0:
			errs = append(errs, fmt.Errorf("%s line %d: %s %s %q matches no error branch in the source (stale: the code changed)", ReasonsFile, r.Line, r.File, r.Func, r.Guard))
		case len(hit) > 1 && r.Guard != "*":
			errs = append(errs, fmt.Errorf("%s line %d: %s %s %q matches %d branches (%s and %s): name one", ReasonsFile, r.Line, r.File, r.Func, r.Guard, len(hit), hit[0], hit[1]))
		}
		for _, b := range hit {
			if o, dup := out[b.ID()]; dup {
				errs = append(errs, fmt.Errorf("%s lines %d and %d both name %s", ReasonsFile, o.Line, r.Line, b))
				continue
			}
			out[b.ID()] = r
		}
	}
	return out, errs
}
