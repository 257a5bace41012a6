package conditionevents

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// checkedModules are the modules whose non-test code must record Events through this package only,
// relative to this package's directory in the monorepo.
var checkedModules = []string{"../../catalogd", "../../rukpak", "../../operator-controller", "../../platform"}

// recorderCalls are the methods of client-go's two recorder APIs (tools/record, tools/events).
var recorderCalls = map[string]bool{"Event": true, "Eventf": true, "AnnotatedEventf": true, "PastEventf": true}

// recorderImports are the recorder packages; outside this package a recorder is a Recorder.
var recorderImports = map[string]bool{"k8s.io/client-go/tools/record": true, "k8s.io/client-go/tools/events": true}

// TestNoEventCallsOutsideThePolicy fails on a direct recorder call, an import of a recorder package
// or the deprecated core/v1 recorder (GetEventRecorderFor) in the non-test Go code of catalogd,
// rukpak, operator-controller and platform outside this package: every Event goes through
// Policy.Record, Normal or Warning, on the one recorder API (Recorder), so that the same thing gives
// the same Event in every controller.
func TestNoEventCallsOutsideThePolicy(t *testing.T) {
	self, err := filepath.Abs(".")
	if err != nil {
		t.Fatal(err)
	}
	files := 0
	for _, mod := range checkedModules {
		if _, err := os.Stat(filepath.Join(mod, "go.mod")); err != nil {
			t.Fatalf("module %s not found next to platform (this check runs in the monorepo): %v", mod, err)
		}
		err := filepath.WalkDir(mod, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() {
				abs, _ := filepath.Abs(path)
				if abs == self || d.Name() == "testdata" || d.Name() == "vendor" || (strings.HasPrefix(d.Name(), ".") && path != mod) {
					return filepath.SkipDir
				}
				return nil
			}
			if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
				return nil
			}
			files++
			for _, v := range recorderUses(t, path) {
				t.Errorf("%s: %s; record Events with conditionevents (Policy.Record, Normal, Warning) on a conditionevents.Recorder", v.pos, v.what)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if files < 100 {
		t.Fatalf("checked only %d files: is the walk looking in the right place?", files)
	}
}

type violation struct {
	pos  token.Position
	what string
}

// recorderUses lists the recorder imports and calls in one file.
func recorderUses(t *testing.T, path string) []violation {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
	if err != nil {
		t.Fatalf("parsing %s: %v", path, err)
	}
	var out []violation
	for _, imp := range f.Imports {
		if p, _ := strconv.Unquote(imp.Path.Value); recorderImports[p] {
			out = append(out, violation{fset.Position(imp.Pos()), "imports " + p})
		}
	}
	ast.Inspect(f, func(n ast.Node) bool {
		call, ok := n.(*ast.CallExpr)
		if !ok {
			return true
		}
		if sel, ok := call.Fun.(*ast.SelectorExpr); ok {
			switch name := sel.Sel.Name; {
			case recorderCalls[name]:
				out = append(out, violation{fset.Position(call.Pos()), "calls ." + name + " (a recorder call)"})
			case name == "GetEventRecorderFor":
				out = append(out, violation{fset.Position(call.Pos()), "calls GetEventRecorderFor (the deprecated core/v1 recorder; use GetEventRecorder)"})
			}
		}
		return true
	})
	return out
}

// TestTheCheckFindsRecorderCalls makes sure the check above sees what it must refuse.
func TestTheCheckFindsRecorderCalls(t *testing.T) {
	path := filepath.Join(t.TempDir(), "bad.go")
	src := `package bad

import "k8s.io/client-go/tools/record"

func f(r record.EventRecorder, mgr interface{ GetEventRecorderFor(string) record.EventRecorder }) {
	r.Eventf(nil, "Normal", "X", "y %d", 1)
	r.Event(nil, "Normal", "X", "y")
	_ = mgr.GetEventRecorderFor("x")
}
`
	if err := os.WriteFile(path, []byte(src), 0o600); err != nil {
		t.Fatal(err)
	}
	if got := recorderUses(t, path); len(got) != 4 {
		t.Fatalf("want 4 violations (import, Eventf, Event, GetEventRecorderFor), got %v", got)
	}
}
