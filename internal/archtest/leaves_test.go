package archtest

import (
	"fmt"
	"slices"
	"strings"
	"testing"
)

// A leaf is a package that imports no package of the module but the ones
// it lists, directly or through others: an engine that stands apart from
// the code that uses it.
type leaf struct {
	path  string   // relative to the module
	allow []string // module packages it may import, relative to the module
	why   string
}

var leaves = []leaf{
	{"internal/apiclient", []string{"internal/apiv1", "internal/fault"},
		"the one client of the admin API (CLI and UI) stays as thin as the CLI: wire types and the error vocabulary only"},
	{"internal/evaluator/objpatch", []string{"internal/fault"},
		"the mutation object engine (canonical JSON, apply merge, JSON patch, diff) knows no policy, request or CEL type"},
	{"internal/evaluator/builtintypes", nil,
		"the type converters of built-in kinds, as the apiserver's plugin has them, know no policy or request"},
	{"internal/evaluator/fastcel", nil,
		"the fast CEL interpreter knows CEL's checked ASTs and values, not policies or requests"},
}

// TestLeafPackages fails on every module package a leaf depends on that
// it does not allow, naming the chain and the file that starts it.
func TestLeafPackages(t *testing.T) {
	graph := load(t)
	for _, l := range leaves {
		root := module + l.path
		p, ok := graph[root]
		if !ok {
			t.Errorf("leaf %s: no such package", l.path)
			continue
		}
		for _, chain := range chainsTo(graph, root, leafForbids(l)) {
			t.Errorf("%s -> %s (%s): %s imports %q, via %s", l.path, trim(chain[len(chain)-1]), l.why,
				importingFile(t, p, chain[1]), chain[1], strings.Join(trimAll(chain[1:]), " -> "))
		}
	}
}

// leafForbids reports the module packages l may not depend on.
func leafForbids(l leaf) func(path string) bool {
	return func(path string) bool {
		rel, inModule := strings.CutPrefix(path, module)
		return inModule && rel != l.path && !slices.Contains(l.allow, rel)
	}
}

// TestLeafRuleCatchesAnEdge runs the leaf check on a graph where the leaf
// reaches a module package through an external one, and where it imports
// an allowed one, so a check that can never fail is noticed.
func TestLeafRuleCatchesAnEdge(t *testing.T) {
	l := leaves[1] // objpatch: it allows one package
	root := module + l.path
	graph := map[string]*pkg{
		root:                          {ImportPath: root, Imports: []string{"example.com/lib", module + l.allow[0]}},
		"example.com/lib":             {ImportPath: "example.com/lib", Imports: []string{module + "internal/evaluator"}},
		module + l.allow[0]:           {ImportPath: module + l.allow[0]},
		module + "internal/evaluator": {ImportPath: module + "internal/evaluator"},
	}
	chains := chainsTo(graph, root, leafForbids(l))
	if got := fmt.Sprint(chains); len(chains) != 1 || len(chains[0]) != 3 || trim(chains[0][2]) != "internal/evaluator" {
		t.Fatalf("chains = %s, want %s -> example.com/lib -> internal/evaluator", got, l.path)
	}
}
