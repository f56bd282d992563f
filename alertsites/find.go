// Package alertsites maps every place system/ sends an alert that tells of
// a state change — a row turned ERROR, EXPIRED, FAILED, a message parked,
// an anniversary lost — to the crash workload whose discovery run reaches
// it, so that every crash point between the change and its alert can be
// run, not a sample. The map (sites.tsv) is static, and a test keeps it
// honest against the source as branches/unreachable.tsv is.
package alertsites

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/outboxchaos/outboxchaos/branches"
)

// Site is one alerts.Send call in system/.
type Site struct {
	File string // under system/, slash-separated
	Line int
	Func string // Type.Method, or the function's name
	Kind string // the alert's Kind field as written: history.AlertParked, or a variable
}

// Key names a site the way sites.tsv does: file, function and kind.
func (s Site) Key() string { return s.File + " " + s.Func + " " + s.Kind }

func (s Site) String() string {
	return fmt.Sprintf("system/%s:%d %s (%s)", s.File, s.Line, s.Func, s.Kind)
}

// Find lists every call of a Send method given an alert.Alert literal in
// the non-test Go files under dir (system/), sorted by file and line.
func Find(dir string) ([]Site, error) {
	var out []Site
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		sites, err := findFile(p, filepath.ToSlash(rel))
		if err != nil {
			return fmt.Errorf("alert sites of %s: %w", p, err)
		}
		out = append(out, sites...)
		return nil
	})
	sort.Slice(out, func(i, j int) bool {
		if out[i].File != out[j].File {
			return out[i].File < out[j].File
		}
		return out[i].Line < out[j].Line
	})
	return out, err
}

func findFile(filename, rel string) ([]Site, error) {
	src, err := os.ReadFile(filename)
	if err != nil {
		return nil, err
	}
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, filename, src, parser.SkipObjectResolution)
	if err != nil {
		return nil, err
	}
	text := func(n ast.Node) string {
		return string(src[fset.Position(n.Pos()).Offset:fset.Position(n.End()).Offset])
	}
	var out []Site
	for _, decl := range f.Decls {
		fn, ok := decl.(*ast.FuncDecl)
		if !ok || fn.Body == nil {
			continue
		}
		name := branches.FuncName(fn)
		ast.Inspect(fn.Body, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok || len(call.Args) != 2 {
				return true
			}
			if sel, ok := call.Fun.(*ast.SelectorExpr); !ok || sel.Sel.Name != "Send" {
				return true
			}
			lit, ok := call.Args[1].(*ast.CompositeLit)
			if !ok || text(lit.Type) != "alert.Alert" {
				return true
			}
			kind := "?"
			for _, e := range lit.Elts {
				if kv, ok := e.(*ast.KeyValueExpr); ok && text(kv.Key) == "Kind" {
					kind = text(kv.Value)
				}
			}
			out = append(out, Site{File: rel, Line: fset.Position(call.Pos()).Line, Func: name, Kind: kind})
			return true
		})
	}
	return out, nil
}
