package differential

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"go/format"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/openapi"
)

// The kube-apiserver's MutatingAdmissionPolicy plugin has no static type
// converter: its type converter manager reads, for the group-version of
// the object's kind, the OpenAPI v3 document the apiserver publishes at
// /openapi/v3/api[s]/<group-version>. Those documents are checked in to
// k8s.io/kubernetes (api/openapi-spec/v3, written from a running
// apiserver with every API enabled) for the release whose apiserver
// library this module tests, and builtinOpenAPI serves them to the
// plugin as the apiserver does.

var updateGenerated = flag.Bool("update", false, "rewrite internal/evaluator/builtintypes/openapi_gen.go from the published OpenAPI documents")

// publishedDocs is the published OpenAPI v3 documents, by group-version.
var publishedDocs = sync.OnceValues(func() (map[schema.GroupVersion][]byte, error) {
	dir, err := openAPISpecDir()
	if err != nil {
		return nil, err
	}
	files, err := filepath.Glob(filepath.Join(dir, "api*__v*_openapi.json"))
	if err != nil {
		return nil, err
	}
	docs := map[schema.GroupVersion][]byte{}
	for _, f := range files {
		// api__v1_openapi.json, apis__apps__v1_openapi.json
		parts := strings.Split(strings.TrimSuffix(filepath.Base(f), "_openapi.json"), "__")
		gv := schema.GroupVersion{Version: parts[len(parts)-1]}
		if parts[0] == "apis" {
			gv.Group = parts[1]
		}
		if docs[gv], err = os.ReadFile(f); err != nil {
			return nil, err
		}
	}
	if len(docs) == 0 {
		return nil, fmt.Errorf("no OpenAPI documents in %s", dir)
	}
	return docs, nil
})

// openAPISpecDir is api/openapi-spec/v3 of the k8s.io/kubernetes release
// of the k8s.io/apiserver this test links (v0.X.Y is from v1.X.Y), from
// the module cache.
func openAPISpecDir() (string, error) {
	v, err := exec.Command("go", "list", "-m", "-f", "{{.Version}}", "k8s.io/apiserver").Output()
	if err != nil {
		return "", fmt.Errorf("go list -m k8s.io/apiserver: %w", err)
	}
	version := strings.TrimSpace(string(v))
	if !strings.HasPrefix(version, "v0.") {
		return "", fmt.Errorf("k8s.io/apiserver version %q has no k8s.io/kubernetes release", version)
	}
	out, err := exec.Command("go", "mod", "download", "-json", "k8s.io/kubernetes@v1."+strings.TrimPrefix(version, "v0.")).Output()
	if err != nil {
		return "", fmt.Errorf("go mod download k8s.io/kubernetes: %w", err)
	}
	var mod struct{ Dir string }
	if err := json.Unmarshal(out, &mod); err != nil {
		return "", err
	}
	return filepath.Join(mod.Dir, "api", "openapi-spec", "v3"), nil
}

// builtinOpenAPI is the apiserver's /openapi/v3 for its built-in
// group-versions, plus those of extra (the CRDs' documents), if any.
type builtinOpenAPI struct {
	extra openapi.Client
}

func (o builtinOpenAPI) Paths() (map[string]openapi.GroupVersion, error) {
	docs, err := publishedDocs()
	if err != nil {
		return nil, err
	}
	paths := map[string]openapi.GroupVersion{}
	if o.extra != nil {
		if paths, err = o.extra.Paths(); err != nil {
			return nil, err
		}
	}
	for gv, doc := range docs {
		path := "apis/" + gv.String()
		if gv.Group == "" {
			path = "api/" + gv.Version
		}
		paths[path] = publishedDoc{path: path, doc: doc}
	}
	return paths, nil
}

type publishedDoc struct {
	path string
	doc  []byte
}

func (d publishedDoc) Schema(contentType string) ([]byte, error) {
	if contentType != "application/json" {
		return nil, fmt.Errorf("only JSON is served, not %s", contentType)
	}
	return d.doc, nil
}

// ServerRelativeURL never changes: the documents do not.
func (d publishedDoc) ServerRelativeURL() string { return "/openapi/v3/" + d.path + "?hash=published" }

// envelopeKinds are the apiserver's own kinds that every group-version's
// document holds and that no request sends to admission.
var envelopeKinds = []string{"WatchEvent", "Status", "APIResourceList"}

// generateBuiltinOpenAPI is the content of openapi_gen.go: for
// each published group-version, the kinds of that group-version its
// document holds (the ones the plugin finds a type for); and the models
// of those kinds that client-go's static type converter lacks, with what
// they refer to, as in the documents less their descriptions.
func generateBuiltinOpenAPI(tb testing.TB) []byte {
	docs, err := publishedDocs()
	if err != nil {
		tb.Fatal(err)
	}
	gvs := make([]schema.GroupVersion, 0, len(docs))
	for gv := range docs {
		gvs = append(gvs, gv)
	}
	slices.SortFunc(gvs, func(a, b schema.GroupVersion) int { return strings.Compare(a.String(), b.String()) })
	kinds := map[schema.GroupVersion][]string{}
	models := map[string]any{}
	var roots []string
	for _, gv := range gvs {
		var doc struct {
			Components struct {
				Schemas map[string]map[string]any `json:"schemas"`
			} `json:"components"`
		}
		if err := json.Unmarshal(docs[gv], &doc); err != nil {
			tb.Fatalf("%v: %v", gv, err)
		}
		for name, model := range doc.Components.Schemas {
			models[name] = model
			gvks, _ := model["x-kubernetes-group-version-kind"].([]any)
			for _, g := range gvks {
				g := g.(map[string]any)
				gvk := schema.GroupVersionKind{Group: g["group"].(string), Version: g["version"].(string), Kind: g["kind"].(string)}
				if gvk.GroupVersion() != gv || !admittedKind(gvk) {
					continue
				}
				kinds[gv] = append(kinds[gv], gvk.Kind)
				if !staticKnows(gvk) {
					roots = append(roots, name)
				}
			}
		}
	}
	extra := map[string]any{}
	var add func(name string)
	add = func(name string) {
		if _, ok := extra[name]; ok {
			return
		}
		m, ok := models[name]
		if !ok {
			tb.Fatalf("no model %s in the published documents", name)
		}
		m = withoutDescriptions(m)
		extra[name] = m
		for _, ref := range refsOf(m) {
			add(ref)
		}
	}
	for _, r := range roots {
		add(r)
	}
	js, err := json.Marshal(extra) // keys sorted
	if err != nil {
		tb.Fatal(err)
	}
	var b bytes.Buffer
	b.WriteString("// Code generated by TestBuiltinOpenAPIGenerated in test/differential (go test -run TestBuiltinOpenAPIGenerated -update); DO NOT EDIT.\n\n")
	b.WriteString("package builtintypes\n\nimport \"k8s.io/apimachinery/pkg/runtime/schema\"\n\n")
	b.WriteString("// builtinKinds is, for each group-version the kube-apiserver publishes\n// under /openapi/v3, the kinds of that group-version its document holds,\n// lists and the apiserver's envelope kinds left out.\n")
	b.WriteString("var builtinKinds = map[schema.GroupVersion][]string{\n")
	for _, gv := range gvs {
		ks := kinds[gv]
		if len(ks) == 0 {
			// apiextensions.k8s.io and apiregistration.k8s.io, whose
			// kinds client-go's scheme lacks: the gateway holds them as
			// JSON where their servers hold them typed, so it leaves them
			// unpublished (the plugin's 503) rather than mutate them
			// otherwise than the plugin.
			continue
		}
		slices.Sort(ks)
		fmt.Fprintf(&b, "\t{Group: %q, Version: %q}: {", gv.Group, gv.Version)
		for i, k := range ks {
			if i > 0 {
				b.WriteString(", ")
			}
			fmt.Fprintf(&b, "%q", k)
		}
		b.WriteString("},\n")
	}
	b.WriteString("}\n\n")
	b.WriteString("// builtinExtraModels holds the models of the kinds of builtinKinds that\n// client-go's type converter lacks, and what they refer to, as the\n// documents have them less their descriptions.\n")
	fmt.Fprintf(&b, "const builtinExtraModels = %q\n", js)
	out, err := format.Source(b.Bytes())
	if err != nil {
		tb.Fatal(err)
	}
	return out
}

// admittedKind is false for the kinds no request sends to admission.
func admittedKind(gvk schema.GroupVersionKind) bool {
	if slices.Contains(envelopeKinds, gvk.Kind) {
		return false
	}
	obj, err := clientgoscheme.Scheme.New(gvk)
	if err != nil {
		// A kind client-go's scheme lacks (CustomResourceDefinition,
		// APIService) is held unstructured by the gateway, typed by the
		// apiserver: not covered.
		return false
	}
	return !meta.IsListType(obj)
}

// staticKnows says whether client-go's type converter, which the gateway
// uses for the kinds it knows, knows gvk; the plugin's manager asks it so.
func staticKnows(gvk schema.GroupVersionKind) bool {
	stub := &unstructured.Unstructured{}
	stub.SetGroupVersionKind(gvk)
	_, err := staticTypeConverter.ObjectToTyped(stub)
	return err == nil
}

func withoutDescriptions(v any) any {
	switch v := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(v))
		for k, e := range v {
			if k == "description" {
				continue
			}
			out[k] = withoutDescriptions(e)
		}
		return out
	case []any:
		out := make([]any, len(v))
		for i, e := range v {
			out[i] = withoutDescriptions(e)
		}
		return out
	}
	return v
}

func refsOf(v any) []string {
	var refs []string
	switch v := v.(type) {
	case map[string]any:
		for k, e := range v {
			if s, ok := e.(string); ok && k == "$ref" {
				refs = append(refs, strings.TrimPrefix(s, "#/components/schemas/"))
				continue
			}
			refs = append(refs, refsOf(e)...)
		}
	case []any:
		for _, e := range v {
			refs = append(refs, refsOf(e)...)
		}
	}
	return refs
}

// TestBuiltinOpenAPIGenerated holds the gateway's table of built-in kinds
// and models to the documents the apiserver publishes.
func TestBuiltinOpenAPIGenerated(t *testing.T) {
	want := generateBuiltinOpenAPI(t)
	path := filepath.Join("..", "..", "internal", "evaluator", "builtintypes", "openapi_gen.go")
	if *updateGenerated {
		if err := os.WriteFile(path, want, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("%s is not what the published OpenAPI documents give: go test -run TestBuiltinOpenAPIGenerated -update", path)
	}
}
