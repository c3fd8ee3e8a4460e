package catalog

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io/fs"
	"slices"
	"strings"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/portcullis-dev/portcullis/internal/evaluator"
	"github.com/portcullis-dev/portcullis/internal/fault"
)

// TestCatalogLoads holds the files and the index together: every entry has
// its file and every file its entry.
func TestCatalogLoads(t *testing.T) {
	es, err := load()
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, e := range es {
		if e.Version == "" || e.Description == "" || e.Category == "" {
			t.Errorf("%s: version, description and category are required", e.Name)
		}
		names[e.Name+".yaml"] = true
	}
	files, _ := fs.Glob(files, "entries/*.yaml")
	for _, f := range files {
		f = strings.TrimPrefix(f, "entries/")
		if f != "index.yaml" && !names[f] {
			t.Errorf("entries/%s is in no index entry", f)
		}
	}
	if _, ok := Get("pod-security-restricted"); !ok {
		t.Fatal("Get(pod-security-restricted) found nothing")
	}
	if _, ok := Get("nope"); ok {
		t.Fatal("Get(nope) found an entry")
	}
}

// TestEntriesCompile compiles every entry, as installed with the defaults,
// in the NewExpressions environment a write is checked with; its bindings
// bind its own policies, and its params are the documented keys.
func TestEntriesCompile(t *testing.T) {
	for _, e := range List() {
		t.Run(e.Name, func(t *testing.T) {
			maps, err := e.Objects(Options{})
			if err != nil {
				t.Fatal(err)
			}
			var objs evaluator.Objects
			policies := map[string]bool{}
			params := map[string]map[string]any{}
			for _, m := range maps {
				js, _ := json.Marshal(m)
				meta := m["metadata"].(map[string]any)
				if meta["labels"].(map[string]any)[LabelEntry] != e.Name || meta["annotations"].(map[string]any)[AnnotationVersion] != e.Version {
					t.Errorf("%s %s: not marked with the entry and its version", m["kind"], meta["name"])
				}
				switch m["kind"] {
				case "ValidatingAdmissionPolicy":
					p := &admissionregistrationv1.ValidatingAdmissionPolicy{}
					unmarshal(t, js, p)
					evaluator.SetPolicyDefaults(p)
					objs.Policies = append(objs.Policies, p)
					policies[p.Name] = true
					if p.Annotations["portcullis.dev/description"] == "" {
						t.Errorf("policy %s has no portcullis.dev/description", p.Name)
					}
				case "ValidatingAdmissionPolicyBinding":
					b := &admissionregistrationv1.ValidatingAdmissionPolicyBinding{}
					unmarshal(t, js, b)
					evaluator.SetBindingDefaults(b)
					objs.Bindings = append(objs.Bindings, b)
					if !slices.Equal(b.Spec.ValidationActions, []admissionregistrationv1.ValidationAction{"Deny"}) {
						t.Errorf("binding %s: validationActions %v, want [Deny]", b.Name, b.Spec.ValidationActions)
					}
				case "ConfigMap":
					u := &unstructured.Unstructured{Object: m}
					objs.Params = append(objs.Params, u)
					params[u.GetName()], _ = m["data"].(map[string]any)
				default:
					t.Errorf("unexpected kind %v", m["kind"])
				}
			}
			for _, b := range objs.Bindings {
				if !policies[b.Spec.PolicyName] {
					t.Errorf("binding %s binds %s, which the entry does not have", b.Name, b.Spec.PolicyName)
				}
				if pr := b.Spec.ParamRef; pr != nil && params[pr.Name] == nil {
					t.Errorf("binding %s: its param %s is not in the entry", b.Name, pr.Name)
				}
			}
			documented := map[string]bool{}
			for _, p := range e.Params {
				documented[p.ConfigMap+"/"+p.Key] = true
				if v, ok := params[p.ConfigMap][p.Key]; !ok || v != p.Default {
					t.Errorf("param %s/%s: the ConfigMap holds %v, the index documents %q", p.ConfigMap, p.Key, v, p.Default)
				}
			}
			for cm, data := range params {
				for k := range data {
					if !documented[cm+"/"+k] {
						t.Errorf("param %s/%s is not documented in the index", cm, k)
					}
				}
			}
			s := evaluator.Compile(objs, evaluator.CompileOptions{Mode: evaluator.NewExpressions})
			for _, ce := range s.CompileErrors() {
				t.Error(ce)
			}
			if len(objs.Policies) == 0 || len(objs.Bindings) == 0 {
				t.Errorf("%d policies and %d bindings", len(objs.Policies), len(objs.Bindings))
			}
		})
	}
}

func unmarshal(t *testing.T, js []byte, v any) {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(string(js)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		t.Fatalf("%s: %v", js, err)
	}
}

func TestObjectsOptions(t *testing.T) {
	e, _ := Get("pod-security-baseline")
	objs, err := e.Objects(Options{Action: "warn", ClusterSelector: "env=prod,tier in (a,b)"})
	if err != nil {
		t.Fatal(err)
	}
	var bindings int
	for _, o := range objs {
		ann, _ := o["metadata"].(map[string]any)["annotations"].(map[string]any)
		if o["kind"] != "ValidatingAdmissionPolicyBinding" {
			if _, ok := ann[AnnotationClusterSelector]; ok {
				t.Errorf("%v: only bindings carry the cluster selector", o["kind"])
			}
			continue
		}
		bindings++
		if got := o["spec"].(map[string]any)["validationActions"]; !slices.Equal(got.([]any), []any{"Warn"}) {
			t.Errorf("validationActions = %v, want [Warn]", got)
		}
		if ann[AnnotationClusterSelector] != "env=prod,tier in (a,b)" {
			t.Errorf("cluster selector annotation = %v", ann[AnnotationClusterSelector])
		}
	}
	if bindings == 0 {
		t.Fatal("no bindings")
	}
	// The shipped entry is not changed by a render.
	if again, _ := e.Objects(Options{}); again[1]["spec"].(map[string]any)["validationActions"].([]any)[0] != "Deny" {
		t.Fatal("a render changed the entry")
	}
	for _, tc := range []struct {
		name  string
		opts  Options
		field string
	}{
		{"unknown action", Options{Action: "Block"}, "action"},
		{"bad selector", Options{ClusterSelector: "env in prod"}, "clusterSelector"},
		{"bad selector key", Options{ClusterSelector: "=x"}, "clusterSelector"},
	} {
		_, err := e.Objects(tc.opts)
		var fe *fault.Error
		if !errors.As(err, &fe) || fe.Code != fault.Invalid || len(fe.Causes) != 1 || fe.Causes[0].Field != tc.field {
			t.Errorf("%s: err = %v, want an Invalid error on %s", tc.name, err, tc.field)
		}
	}
}

// TestEntryDigests fails when an entry's file changed but its recorded
// digest, and so most likely its version, did not: an installed copy
// would carry a version that no longer says what it holds.
func TestEntryDigests(t *testing.T) {
	for _, e := range List() {
		sum := sha256.Sum256(e.YAML)
		if got := hex.EncodeToString(sum[:])[:16]; got != e.Digest {
			t.Errorf("entries/%s.yaml changed: bump its version (now %s) in entries/index.yaml and set its digest to %s", e.Name, e.Version, got)
		}
	}
}
