package archtest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"go/parser"
	"go/token"
	"io"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
)

const module = "github.com/portcullis-dev/portcullis/"

// rule forbids every package whose path (relative to the module) matches
// from to depend on a package matching to, directly or through others.
type rule struct {
	from, to *regexp.Regexp
	why      string
}

func pkgs(names ...string) *regexp.Regexp {
	return regexp.MustCompile(`^(` + strings.Join(names, "|") + `)(/.*)?$`)
}

// The import rules of docs/development.md ("Conventions", Imports). Stores
// and database packages are named one by one; the database driver counts
// as one too.
var rules = []rule{
	{pkgs("internal/evaluator"), pkgs("internal/policystore", "internal/inventory", "internal/tenancy", "internal/webhook",
		"internal/decisions", "internal/api", "internal/database", "internal/pgnotify", "internal/pglocal", "internal/pgtest",
		"github.com/jackc/pgx/v5"),
		"the evaluator is pure: no store, tenancy, webhook, decisions, API or database"},
	{pkgs("internal/answer"), pkgs("internal/policystore", "internal/inventory", "internal/tenancy", "internal/webhook",
		"internal/decisions", "internal/api", "internal/limits", "internal/database", "internal/pgnotify", "internal/pglocal",
		"internal/pgtest", "github.com/jackc/pgx/v5"),
		"answers are made from a compiled snapshot and a decoded review alone: the caller brings the store, the inventory and the limits"},
	{pkgs("internal/tenancy"), pkgs("internal/evaluator"), "tenancy never reads policies"},
	{pkgs("internal/decisions"), pkgs("internal/evaluator"), "the recorder stores what it is handed; the webhook converts"},
	{pkgs("internal/api"), pkgs("internal/webhook"), "the admin API and the webhook share internal/admission, not each other"},
	{pkgs("internal/webhook"), pkgs("internal/api"), "the admin API and the webhook share internal/admission, not each other"},
	{pkgs("internal"), pkgs("cmd"), "cmd/ wires packages; nothing imports it"},
	{pkgs("internal/cli"), pkgs("internal/policystore", "internal/inventory", "internal/tenancy", "internal/decisions",
		"internal/evaluator", "internal/webhook", "internal/api"),
		"the CLI talks to the admin API through internal/apiclient (wire types in internal/apiv1); only migrate and bootstrap use internal/database"},
	{pkgs("internal/ui"), pkgs("internal/policystore", "internal/inventory", "internal/tenancy", "internal/decisions",
		"internal/evaluator", "internal/webhook", "internal/api", "internal/adminauth", "internal/auditlog",
		"internal/database", "github.com/jackc/pgx/v5"),
		"the web UI calls the admin API's handler in-process through internal/apiclient (wire types in internal/apiv1), so the API alone authorizes"},
	{pkgs("internal/authmiss"), pkgs("internal/adminauth", "internal/api", "internal/ui", "internal/uisession", "internal/database",
		"internal/tenancy", "internal/policystore", "internal/inventory", "internal/decisions", "github.com/jackc/pgx/v5"),
		"the unknown-credential limiter is a leaf that the API and the UI share: it counts, it reads nothing"},
}

type pkg struct {
	ImportPath string
	Dir        string
	GoFiles    []string
	Imports    []string
	// Of the module's own packages, for the conventions on files: the
	// tests, and the files a build constraint leaves out here.
	TestGoFiles, XTestGoFiles, IgnoredGoFiles []string
}

// TestImportRules fails on every forbidden edge of the production import
// graph, naming the chain of packages and the file that starts it.
func TestImportRules(t *testing.T) {
	graph := load(t)
	var violations []string
	for _, p := range graph {
		from, ok := strings.CutPrefix(p.ImportPath, module)
		if !ok {
			continue
		}
		for _, r := range rules {
			if !r.from.MatchString(from) {
				continue
			}
			for _, chain := range forbiddenChains(graph, p.ImportPath, r.to) {
				file := importingFile(t, p, chain[1])
				violations = append(violations, fmt.Sprintf("%s -> %s (%s): %s imports %q",
					from, trim(chain[len(chain)-1]), r.why, file, chain[1]))
				if len(chain) > 2 {
					violations[len(violations)-1] += ", via " + strings.Join(trimAll(chain[1:]), " -> ")
				}
			}
		}
	}
	slices.Sort(violations)
	for _, v := range slices.Compact(violations) {
		t.Error(v)
	}
}

// forbiddenChains returns, for each first hop out of root that leads to a
// forbidden package, the shortest chain root -> hop -> ... -> forbidden.
func forbiddenChains(graph map[string]*pkg, root string, to *regexp.Regexp) [][]string {
	return chainsTo(graph, root, func(path string) bool { return to.MatchString(trim(path)) })
}

// chainsTo is forbiddenChains for packages (full import paths) that
// forbidden reports.
func chainsTo(graph map[string]*pkg, root string, forbidden func(path string) bool) [][]string {
	var chains [][]string
	for _, hop := range graph[root].Imports {
		prev := map[string]string{hop: ""}
		queue := []string{hop}
		for len(queue) > 0 {
			cur := queue[0]
			queue = queue[1:]
			if forbidden(cur) {
				chain := []string{cur}
				for p := prev[cur]; p != ""; p = prev[p] {
					chain = append(chain, p)
				}
				chain = append(chain, root)
				slices.Reverse(chain)
				chains = append(chains, chain)
				break
			}
			if p, ok := graph[cur]; ok {
				for _, next := range p.Imports {
					if _, seen := prev[next]; !seen {
						prev[next] = cur
						queue = append(queue, next)
					}
				}
			}
		}
	}
	return chains
}

// load lists the module's packages and all their dependencies; the import
// graph is without tests: the rules are about the production graph. go
// list runs once for all the tests of the package.
func load(t *testing.T) map[string]*pkg {
	t.Helper()
	listed.once.Do(func() { listed.graph, listed.err = list() })
	if listed.err != nil {
		t.Fatal(listed.err)
	}
	return listed.graph
}

var listed struct {
	once  sync.Once
	graph map[string]*pkg
	err   error
}

func list() (map[string]*pkg, error) {
	cmd := exec.Command("go", "list", "-deps",
		"-json=ImportPath,Dir,GoFiles,Imports,TestGoFiles,XTestGoFiles,IgnoredGoFiles", module+"...")
	cmd.Dir = "../.."
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("go list: %v\n%s", err, stderr.String())
	}
	graph := map[string]*pkg{}
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p pkg
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			return nil, err
		}
		graph[p.ImportPath] = &p
	}
	if len(graph) == 0 {
		return nil, errors.New("go list found no packages")
	}
	return graph, nil
}

// importingFile names the file of p that imports path.
func importingFile(t *testing.T, p *pkg, path string) string {
	t.Helper()
	for _, name := range p.GoFiles {
		file := filepath.Join(p.Dir, name)
		f, err := parser.ParseFile(token.NewFileSet(), file, nil, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, spec := range f.Imports {
			if s, _ := strconv.Unquote(spec.Path.Value); s == path {
				return trim(p.ImportPath) + "/" + name
			}
		}
	}
	return trim(p.ImportPath)
}

func trim(path string) string { return strings.TrimPrefix(path, module) }

func trimAll(paths []string) []string {
	out := make([]string, len(paths))
	for i, p := range paths {
		out[i] = trim(p)
	}
	return out
}

// TestRulesCatchAnEdge runs the checker on a graph with one forbidden edge,
// so a rule that can never match is noticed.
func TestRulesCatchAnEdge(t *testing.T) {
	graph := map[string]*pkg{
		module + "internal/decisions": {ImportPath: module + "internal/decisions", Imports: []string{module + "internal/helper"}},
		module + "internal/helper":    {ImportPath: module + "internal/helper", Imports: []string{module + "internal/evaluator/fastcel"}},
	}
	for _, r := range rules {
		if !r.from.MatchString("internal/decisions") || r.to.MatchString("internal/helper") {
			continue
		}
		chains := forbiddenChains(graph, module+"internal/decisions", r.to)
		if len(chains) != 1 || len(chains[0]) != 3 || trim(chains[0][2]) != "internal/evaluator/fastcel" {
			t.Fatalf("chains = %v, want decisions -> helper -> evaluator/fastcel", chains)
		}
		return
	}
	t.Fatal("no rule forbids internal/decisions -> internal/evaluator")
}
