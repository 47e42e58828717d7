package jobs

import (
	"go/parser"
	"go/token"
	"path/filepath"
	"strings"
	"testing"
)

// TestJobModelNamesNoBackend: the job model sits below the backends (its
// container options live in internal/container), so no backend change
// reaches the model and the model never imports backend code.
func TestJobModelNamesNoBackend(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	checked := 0
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		ast, err := parser.ParseFile(fset, f, nil, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		checked++
		for _, imp := range ast.Imports {
			if strings.Contains(imp.Path.Value, "/internal/backends") {
				t.Errorf("%s imports %s", f, imp.Path.Value)
			}
		}
	}
	if checked == 0 {
		t.Fatal("no source files checked")
	}
}
