package archtest

import (
	"bytes"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// maxLines is the length past which a production Go file is split by
// concern (docs/development.md, "Conventions", Files).
const maxLines = 450

// longFiles may pass maxLines, each for the reason given. A key ending in
// "/" covers every file of that directory. A file listed here that is back
// under the limit fails the test until it leaves the list.
var longFiles = map[string]string{
	"internal/admission/jsonobj.go": "the hand-written JSON parser of admission reviews, one scanner read whole",
	"internal/evaluator/fastcel/":   "the fast CEL interpreter",
}

// sleepers may wait with time.Sleep (or a bare <-time.After) in a test,
// each for the reason given: one that waits for something no condition can
// be polled for and no clock can be injected into. A file listed here that
// no longer sleeps fails the test until it leaves the list.
var sleepers = map[string]string{}

// TestFileLength fails on every production Go file of the module over
// maxLines lines that longFiles does not excuse.
func TestFileLength(t *testing.T) {
	used := map[string]bool{}
	for _, f := range moduleFiles(t, false) {
		n := lineCount(t, f.abs)
		key, excused := excuse(longFiles, f.rel)
		if excused && n > maxLines {
			used[key] = true
		}
		if n > maxLines && !excused {
			t.Errorf("%s has %d lines, over %d: split it by concern (docs/development.md, \"Conventions\", Files)",
				f.rel, n, maxLines)
		}
		if excused && strings.HasSuffix(key, "/") {
			used[key] = true // a directory's exception holds while it exists
		}
	}
	for _, key := range sortedKeys(longFiles) {
		if !used[key] {
			t.Errorf("longFiles excuses %s, which is not a production file over %d lines (any more): remove it from the list", key, maxLines)
		}
	}
}

// TestNoSleepInTests fails on every time.Sleep, or <-time.After statement,
// in a test file of the module outside sleepers: a test waits for its
// condition with testutil.Eventually, or injects a clock where time itself
// is under test.
func TestNoSleepInTests(t *testing.T) {
	used := map[string]bool{}
	for _, f := range moduleFiles(t, true) {
		src, err := os.ReadFile(f.abs)
		if err != nil {
			t.Fatal(err)
		}
		at, err := sleeps(f.rel, src)
		if err != nil {
			t.Fatal(err)
		}
		if len(at) == 0 {
			continue
		}
		if _, ok := sleepers[f.rel]; ok {
			used[f.rel] = true
			continue
		}
		for _, pos := range at {
			t.Errorf("%s sleeps: wait for the condition with testutil.Eventually, or inject a clock (docs/development.md, \"Conventions\", Tests)", pos)
		}
	}
	for _, key := range sortedKeys(sleepers) {
		if !used[key] {
			t.Errorf("sleepers lists %s, which no longer sleeps: remove it from the list", key)
		}
	}
}

type goFile struct{ rel, abs string }

// moduleFiles lists the module's Go files, production or test: every
// package of go.mod, with the files a build constraint leaves out on this
// machine. The modules under test/ and tools/ have their own go.mod and are
// not listed.
func moduleFiles(t *testing.T, tests bool) []goFile {
	t.Helper()
	var files []goFile
	for _, p := range load(t) {
		rel, ok := strings.CutPrefix(p.ImportPath, module)
		if !ok {
			continue
		}
		names := slices.Concat(p.GoFiles, p.TestGoFiles, p.XTestGoFiles, p.IgnoredGoFiles)
		for _, name := range names {
			if strings.HasSuffix(name, "_test.go") == tests && strings.HasSuffix(name, ".go") {
				files = append(files, goFile{rel: rel + "/" + name, abs: filepath.Join(p.Dir, name)})
			}
		}
	}
	if len(files) == 0 {
		t.Fatal("no Go files listed")
	}
	slices.SortFunc(files, func(a, b goFile) int { return strings.Compare(a.rel, b.rel) })
	return slices.CompactFunc(files, func(a, b goFile) bool { return a.rel == b.rel })
}

// excuse returns the key of list that covers the file rel.
func excuse(list map[string]string, rel string) (string, bool) {
	if _, ok := list[rel]; ok {
		return rel, true
	}
	for key := range list {
		if strings.HasSuffix(key, "/") && strings.HasPrefix(rel, key) {
			return key, true
		}
	}
	return "", false
}

// lineCount counts lines as wc -l does.
func lineCount(t *testing.T, path string) int {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return bytes.Count(b, []byte("\n"))
}

// sleeps returns where a Go file calls time.Sleep, or waits on a bare
// <-time.After (a sleep by another name), whatever name it imports time
// under. A <-time.After in a select is a timeout, not a sleep.
func sleeps(name string, src []byte) ([]string, error) {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, name, src, parser.SkipObjectResolution)
	if err != nil {
		return nil, err
	}
	local := ""
	for _, spec := range f.Imports {
		if p, _ := strconv.Unquote(spec.Path.Value); p == "time" {
			local = "time"
			if spec.Name != nil {
				local = spec.Name.Name
			}
		}
	}
	if local == "" || local == "_" {
		return nil, nil
	}
	isTime := func(e ast.Expr, fn string) bool {
		sel, ok := e.(*ast.SelectorExpr)
		if !ok || sel.Sel.Name != fn {
			return false
		}
		id, ok := sel.X.(*ast.Ident)
		return ok && id.Name == local
	}
	var at []string
	timeouts := map[ast.Stmt]bool{} // the receives of select cases
	ast.Inspect(f, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.CommClause:
			timeouts[n.Comm] = true
		case *ast.CallExpr:
			if isTime(n.Fun, "Sleep") {
				at = append(at, fset.Position(n.Pos()).String())
			}
		case *ast.ExprStmt:
			if u, ok := n.X.(*ast.UnaryExpr); ok && u.Op == token.ARROW && !timeouts[n] {
				if c, ok := u.X.(*ast.CallExpr); ok && isTime(c.Fun, "After") {
					at = append(at, fset.Position(n.Pos()).String())
				}
			}
		}
		return true
	})
	return at, nil
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// TestSleepsCatchesASleep runs the sleep finder on sources with and without
// a sleep, so that a finder that can never match is noticed.
func TestSleepsCatchesASleep(t *testing.T) {
	for _, tc := range []struct {
		name, body string
		imp        string
		want       int
	}{
		{"time.Sleep", `time.Sleep(time.Second)`, `"time"`, 1},
		{"renamed import", `clock.Sleep(clock.Second)`, `clock "time"`, 1},
		{"bare receive from time.After", `<-time.After(time.Second)`, `"time"`, 1},
		{"time.After in a select is a timeout", `select { case <-ch: case <-time.After(time.Second): }`, `"time"`, 0},
		{"Sleep of another package", `other.Sleep(1)`, `"time"`, 0},
		{"two sleeps", "time.Sleep(1)\n\ttime.Sleep(2)", `"time"`, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src := fmt.Sprintf("package x\n\nimport %s\n\nvar ch, other chan int\n\nfunc f() {\n\t%s\n}\n", tc.imp, tc.body)
			at, err := sleeps("x_test.go", []byte(src))
			if err != nil {
				t.Fatal(err)
			}
			if len(at) != tc.want {
				t.Fatalf("found %v, want %d", at, tc.want)
			}
		})
	}
}
