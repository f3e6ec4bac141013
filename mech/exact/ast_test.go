package exact

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// conversion lists the functions allowed to read float64 utilities: the
// one-time conversion to grid integers (or order keys when Delta == 0),
// TopKLazy's bounds (it hands them to lazyBounds and samples in topKLazy)
// and the conversion of a proposed lazy individual (lazyGrid). Calls made
// from them are not followed.
var conversion = map[string]bool{"toGrid": true, "orderKey": true, "gridAll": true, "keysAll": true, "newProbState": true,
	"TopKLazy": true, "lazyBounds": true, "lazyGrid": true, "topKMaterialised": true}

// TestNoFloatInSamplingPath parses the package and checks every function
// reachable from TopK, topKLazy and ListProb (by name, conservatively: every function
// or method of that name) except the conversion functions: no float32 or
// float64 identifier, no floating-point literal, no use of package math,
// and no read of a utility value (.Vals or .Val) other than len(x.Vals)
// or an index-only range over it.
func TestNoFloatInSamplingPath(t *testing.T) {
	fset := token.NewFileSet()
	files, _ := filepath.Glob("*.go")
	funcs := map[string][]*ast.FuncDecl{}
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		af, err := parser.ParseFile(fset, f, src, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range af.Decls {
			if fd, ok := d.(*ast.FuncDecl); ok {
				funcs[fd.Name.Name] = append(funcs[fd.Name.Name], fd)
			}
		}
	}
	reach := map[string]bool{}
	queue := []string{"TopK", "topKLazy", "ListProb"}
	for len(queue) > 0 {
		name := queue[0]
		queue = queue[1:]
		if reach[name] || conversion[name] {
			continue
		}
		decls := funcs[name]
		if len(decls) == 0 {
			continue // not declared here (builtin, other package, closure var)
		}
		reach[name] = true
		for _, fd := range decls {
			ast.Inspect(fd, func(n ast.Node) bool {
				if c, ok := n.(*ast.CallExpr); ok {
					switch f := c.Fun.(type) {
					case *ast.Ident:
						queue = append(queue, f.Name)
					case *ast.SelectorExpr:
						queue = append(queue, f.Sel.Name)
					}
				}
				return true
			})
		}
	}
	for _, must := range []string{"TopK", "topKLazy", "draw", "ListProb", "bernPow", "bernPowSlow", "accept", "below", "u64", "build", "member", "topExact", "probExact", "powBound", "mulQ"} {
		if !reach[must] {
			t.Fatalf("%s not found on the sampling path: the call-graph walk is broken", must)
		}
	}
	for name := range reach {
		for _, fd := range funcs[name] {
			checkNoFloat(t, fset, fd)
		}
	}
}

func checkNoFloat(t *testing.T, fset *token.FileSet, fd *ast.FuncDecl) {
	t.Helper()
	allowed := map[ast.Node]bool{} // .Vals selectors used only for their length or indices
	ast.Inspect(fd, func(n ast.Node) bool {
		switch x := n.(type) {
		case *ast.CallExpr:
			if id, ok := x.Fun.(*ast.Ident); ok && id.Name == "len" && len(x.Args) == 1 {
				allowed[x.Args[0]] = true
			}
		case *ast.RangeStmt:
			if x.Value == nil {
				allowed[x.X] = true
			}
		}
		return true
	})
	ast.Inspect(fd, func(n ast.Node) bool {
		pos := func() string { return fset.Position(n.Pos()).String() + " in " + fd.Name.Name }
		switch x := n.(type) {
		case *ast.Ident:
			if x.Name == "float64" || x.Name == "float32" {
				t.Errorf("%s: %s on the sampling path", pos(), x.Name)
			}
		case *ast.BasicLit:
			if x.Kind == token.FLOAT {
				t.Errorf("%s: floating-point literal %s", pos(), x.Value)
			}
		case *ast.SelectorExpr:
			if id, ok := x.X.(*ast.Ident); ok && id.Name == "math" {
				t.Errorf("%s: math.%s", pos(), x.Sel.Name)
			}
			if (x.Sel.Name == "Vals" || x.Sel.Name == "Val") && !allowed[x] {
				t.Errorf("%s: reads float utilities (.%s) outside the conversion functions", pos(), x.Sel.Name)
			}
		}
		return true
	})
}
