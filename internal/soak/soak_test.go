package soak

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// TestListed: every test that sizes a loop with N is in Tests, and every
// test in Tests does, so that .ci/run's full-size run misses none.
func TestListed(t *testing.T) {
	var callers []string
	err := filepath.WalkDir("../..", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "node_modules" || strings.HasPrefix(d.Name(), ".")) && path != "../.." {
			return filepath.SkipDir
		}
		if !strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, 0)
		if err != nil {
			return err
		}
		for _, decl := range f.Decls {
			fn, ok := decl.(*ast.FuncDecl)
			if !ok || !strings.HasPrefix(fn.Name.Name, "Test") {
				continue
			}
			ast.Inspect(fn, func(n ast.Node) bool {
				if sel, ok := n.(*ast.SelectorExpr); ok && (sel.Sel.Name == "N" || sel.Sel.Name == "Enabled") {
					if id, ok := sel.X.(*ast.Ident); ok && id.Name == "soak" {
						callers = append(callers, fn.Name.Name)
						return false
					}
				}
				return true
			})
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(callers)
	callers = slices.Compact(callers)
	listed := regexp.MustCompile(`\w+`).FindAllString(strings.Trim(Tests, "^()$"), -1)
	slices.Sort(listed)
	if !slices.Equal(callers, listed) {
		t.Errorf("soak.Tests lists %v; the tests calling soak.N or soak.Enabled are %v", listed, callers)
	}
}
