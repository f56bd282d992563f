// Package branches maps the error-handling branches of the system under
// test and says which of them a set of runs reached: it
// finds every branch in the source (an `if` on an error, a `case` on a
// context's end), then reads Go coverage profiles written by pods built
// with -cover (GOCOVERDIR, merged to text by `go tool covdata textfmt`).
// It reads files and nothing else: no services, no processes.
package branches

import (
	"bytes"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"sort"
	"strings"
)

// The kinds of branch.
const (
	KindErr      = "err != nil"   // if err != nil { … } (any error variable)
	KindErrorsIs = "errors.Is/As" // if errors.Is(err, X) { … }
	KindDone     = "ctx done"     // case <-ctx.Done(): …
)

// Branch is one error-handling branch: its body runs only when something
// went wrong.
type Branch struct {
	Pkg  string `json:"pkg"`  // import path
	File string `json:"file"` // import path of the file (as in a coverage profile)
	Line int    `json:"line"` // of the if or case
	Func string `json:"func"` // enclosing function
	Kind string `json:"kind"`
	// Guard is what the branch tests, as source text with its white space
	// collapsed: for an if without an init, the statement before it when
	// that is an assignment, a call or a declaration (the call whose error
	// it checks; its first line only), then the if's init and condition;
	// for a select case, its receive. It names the branch in
	// Reasons without a line number, which drifts with every edit.
	Guard string `json:"guard"`
	// The body's span (after the opening brace or the case's colon).
	From, To Pos `json:"-"`
}

// Pos is a line and column.
type Pos struct{ Line, Col int }

func (p Pos) before(q Pos) bool { return p.Line < q.Line || p.Line == q.Line && p.Col < q.Col }

// ID names the branch stably enough to compare runs of the same commit.
func (b Branch) ID() string { return fmt.Sprintf("%s:%d", b.File, b.Line) }

func (b Branch) String() string {
	return fmt.Sprintf("%s:%d %s (%s)", strings.TrimPrefix(b.File, b.Pkg+"/"), b.Line, b.Func, b.Kind)
}

// Find walks dir (a folder of module, whose import path is modPath, such
// as "system"), parses every non-test Go file and returns its error
// branches, by file and line. Folders named in skip (and testdata) are
// left out.
func Find(root, modPath, dir string, skip ...string) ([]Branch, error) {
	var out []Branch
	err := filepath.WalkDir(filepath.Join(root, dir), func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if n := d.Name(); n == "testdata" || strings.HasPrefix(n, ".") || slices.Contains(skip, n) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
			return nil
		}
		rel, err := filepath.Rel(root, p)
		if err != nil {
			return err
		}
		file := path.Join(modPath, filepath.ToSlash(rel))
		bs, err := findFile(p, path.Dir(file), file)
		if err != nil {
			return err
		}
		out = append(out, bs...)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("find error branches under %s: %w", dir, err)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].File != out[j].File {
			return out[i].File < out[j].File
		}
		return out[i].Line < out[j].Line
	})
	return out, nil
}

func findFile(filename, pkg, file string) ([]Branch, error) {
	fset := token.NewFileSet()
	src, err := os.ReadFile(filename)
	if err != nil {
		return nil, err
	}
	f, err := parser.ParseFile(fset, filename, src, parser.SkipObjectResolution)
	if err != nil {
		return nil, err
	}
	pos := func(p token.Pos) Pos { q := fset.Position(p); return Pos{q.Line, q.Column} }
	text := func(n ast.Node) string {
		return strings.Join(strings.Fields(string(src[fset.Position(n.Pos()).Offset:fset.Position(n.End()).Offset])), " ")
	}
	firstLine := func(n ast.Node) string {
		b := src[fset.Position(n.Pos()).Offset:fset.Position(n.End()).Offset]
		if i := bytes.IndexByte(b, '\n'); i >= 0 {
			b = b[:i]
		}
		return strings.Join(strings.Fields(string(b)), " ")
	}
	// prev maps each statement to the one before it in its block.
	prev := map[ast.Stmt]ast.Stmt{}
	var out []Branch
	for _, decl := range f.Decls {
		fn, ok := decl.(*ast.FuncDecl)
		if !ok || fn.Body == nil {
			continue
		}
		name := FuncName(fn)
		ast.Inspect(fn.Body, func(n ast.Node) bool {
			var list []ast.Stmt
			switch n := n.(type) {
			case *ast.BlockStmt:
				list = n.List
			case *ast.CaseClause:
				list = n.Body
			case *ast.CommClause:
				list = n.Body
			}
			for i := 1; i < len(list); i++ {
				prev[list[i]] = list[i-1]
			}
			switch n := n.(type) {
			case *ast.IfStmt:
				if k := condKind(n.Cond); k != "" && len(n.Body.List) > 0 {
					var g []string
					if n.Init == nil {
						switch p := prev[n].(type) {
						case *ast.AssignStmt, *ast.ExprStmt, *ast.DeclStmt:
							g = append(g, firstLine(p))
						}
					}
					if n.Init != nil {
						g = append(g, text(n.Init))
					}
					g = append(g, text(n.Cond))
					out = append(out, Branch{Pkg: pkg, File: file, Line: pos(n.If).Line, Func: name, Kind: k,
						Guard: strings.Join(g, "; "), From: pos(n.Body.Lbrace), To: pos(n.Body.End())})
				}
			case *ast.CommClause:
				if isDone(n.Comm) && len(n.Body) > 0 {
					out = append(out, Branch{Pkg: pkg, File: file, Line: pos(n.Case).Line, Func: name, Kind: KindDone,
						Guard: text(n.Comm), From: pos(n.Colon), To: pos(n.Body[len(n.Body)-1].End())})
				}
			}
			return true
		})
	}
	return out, nil
}

// FuncName names a function as the maps of system/ do: Type.Method for a
// method (of a pointer or generic receiver too), else its name.
func FuncName(fn *ast.FuncDecl) string {
	if fn.Recv != nil && len(fn.Recv.List) == 1 {
		return recvName(fn.Recv.List[0].Type) + "." + fn.Name.Name
	}
	return fn.Name.Name
}

func recvName(e ast.Expr) string {
	switch t := e.(type) {
	case *ast.StarExpr:
		return recvName(t.X)
	case *ast.IndexExpr:
		return recvName(t.X)
	case *ast.Ident:
		return t.Name
	}
	return "?"
}

// condKind says which kind of error branch an if condition makes, "" for
// none: a comparison of an error variable with nil, or errors.Is/As,
// anywhere in a chain of && and ||.
func condKind(e ast.Expr) string {
	switch c := e.(type) {
	case *ast.ParenExpr:
		return condKind(c.X)
	case *ast.BinaryExpr:
		switch c.Op {
		case token.LAND, token.LOR:
			if k := condKind(c.X); k != "" {
				return k
			}
			return condKind(c.Y)
		case token.NEQ:
			if isErrIdent(c.X) && isNil(c.Y) {
				return KindErr
			}
		}
	case *ast.CallExpr:
		if sel, ok := c.Fun.(*ast.SelectorExpr); ok {
			if x, ok := sel.X.(*ast.Ident); ok && x.Name == "errors" && (sel.Sel.Name == "Is" || sel.Sel.Name == "As") {
				return KindErrorsIs
			}
		}
	}
	return ""
}

func isErrIdent(e ast.Expr) bool {
	var name string
	switch x := e.(type) {
	case *ast.Ident:
		name = x.Name
	case *ast.SelectorExpr:
		name = x.Sel.Name
	default:
		return false
	}
	return name == "err" || strings.HasSuffix(name, "Err") || strings.HasSuffix(name, "err")
}

func isNil(e ast.Expr) bool { id, ok := e.(*ast.Ident); return ok && id.Name == "nil" }

// isDone reports whether a select case receives from a Done() channel.
func isDone(s ast.Stmt) bool {
	var x ast.Expr
	switch c := s.(type) {
	case *ast.ExprStmt:
		x = c.X
	case *ast.AssignStmt:
		if len(c.Rhs) == 1 {
			x = c.Rhs[0]
		}
	}
	u, ok := x.(*ast.UnaryExpr)
	if !ok || u.Op != token.ARROW {
		return false
	}
	call, ok := u.X.(*ast.CallExpr)
	if !ok {
		return false
	}
	sel, ok := call.Fun.(*ast.SelectorExpr)
	return ok && sel.Sel.Name == "Done"
}
