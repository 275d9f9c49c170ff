package repocheck

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// maxFuncLines is the longest a function may be (GUIDE: small enough to
// read at once; a big handler is a parse/validate step into a typed plan,
// then its run).
const maxFuncLines = 120

// longFuncsAllowed are functions still over maxFuncLines, by "path:Func"
// (methods as "path:Type.Method"), each waiting to be split; the list only
// shrinks (an entry no longer needed fails the test).
var longFuncsAllowed = map[string]bool{}

// TestFunctionLength: no non-test function in the repository — every
// module, examples and bench programs included — is longer than
// maxFuncLines, counting from `func` to the closing brace. A table-driven
// list (a function ending in `return []T{…}`, like conformance's checks) is
// measured without its table, and every function literal — each table
// entry's closure among them — is measured on its own.
func TestFunctionLength(t *testing.T) {
	root := repoRoot(t)
	var long []string
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			if path != root && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		found, err := longFuncs(path, rel)
		long = append(long, found...)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(long)
	seen := map[string]bool{}
	for _, l := range long {
		key, _, _ := strings.Cut(l, " ")
		seen[key] = true
		if !longFuncsAllowed[key] {
			t.Errorf("%s: over %d lines; split it (parse/validate into a plan, then run it)", l, maxFuncLines)
		}
	}
	for key := range longFuncsAllowed {
		if !seen[key] {
			t.Errorf("%s is no longer over %d lines (or is gone): drop it from longFuncsAllowed", key, maxFuncLines)
		}
	}
}

// longFuncs returns "rel:Func (N lines)" for every function of the file
// over maxFuncLines.
func longFuncs(path, rel string) ([]string, error) {
	fset := token.NewFileSet()
	file, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", rel, err)
	}
	lines := func(from, to token.Pos) int { return fset.Position(to).Line - fset.Position(from).Line + 1 }
	var out []string
	ast.Inspect(file, func(n ast.Node) bool {
		switch fn := n.(type) {
		case *ast.FuncDecl:
			if fn.Body == nil {
				return false
			}
			n := lines(fn.Pos(), fn.End())
			if table := returnedTable(fn.Body); table != nil {
				n -= lines(table.Pos(), table.End()) - 1
			}
			if n > maxFuncLines {
				out = append(out, fmt.Sprintf("%s:%s (%d lines)", rel, funcName(fn), n))
			}
		case *ast.FuncLit:
			if n := lines(fn.Pos(), fn.End()); n > maxFuncLines {
				out = append(out, fmt.Sprintf("%s:%d (a function literal of %d lines)", rel, fset.Position(fn.Pos()).Line, n))
			}
		}
		return true
	})
	return out, nil
}

// returnedTable is the composite literal a body's last statement returns
// (a table of checks or cases), or nil.
func returnedTable(body *ast.BlockStmt) *ast.CompositeLit {
	if len(body.List) == 0 {
		return nil
	}
	ret, ok := body.List[len(body.List)-1].(*ast.ReturnStmt)
	if !ok || len(ret.Results) != 1 {
		return nil
	}
	lit, _ := ret.Results[0].(*ast.CompositeLit)
	return lit
}

// funcName is Func, or Type.Method for a method.
func funcName(fn *ast.FuncDecl) string {
	if fn.Recv == nil || len(fn.Recv.List) == 0 {
		return fn.Name.Name
	}
	t := fn.Recv.List[0].Type
	if s, ok := t.(*ast.StarExpr); ok {
		t = s.X
	}
	switch x := t.(type) {
	case *ast.IndexExpr:
		t = x.X
	case *ast.IndexListExpr:
		t = x.X
	}
	if id, ok := t.(*ast.Ident); ok {
		return id.Name + "." + fn.Name.Name
	}
	return fn.Name.Name
}
