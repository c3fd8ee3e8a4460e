package e2e

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	"sigs.k8s.io/yaml"
)

// applyFile creates every object of a YAML stream, as `kubectl apply -f`
// does on a cluster that has none of them: resources are found through
// discovery, and unknown or duplicate fields are errors (kubectl's strict
// field validation); a List gives its items. A warning from the apiserver
// fails the test too.
func applyFile(t *testing.T, config *rest.Config, path string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var warnings warningList
	config = rest.CopyConfig(config)
	config.WarningHandlerWithContext = &warnings
	cs, err := kubernetes.NewForConfig(config)
	if err != nil {
		t.Fatal(err)
	}
	dyn, err := dynamic.NewForConfig(config)
	if err != nil {
		t.Fatal(err)
	}
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(cs.Discovery()))
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(b), 4096)
	n := 0
	for {
		var obj unstructured.Unstructured
		if err := dec.Decode(&obj.Object); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		if len(obj.Object) == 0 {
			continue
		}
		objs := []unstructured.Unstructured{obj}
		if obj.IsList() {
			list, err := obj.ToList()
			if err != nil {
				t.Fatalf("%s: %v", path, err)
			}
			objs = list.Items
		}
		for _, obj := range objs {
			gvk := obj.GroupVersionKind()
			m, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
			if err != nil {
				t.Fatalf("%s: %s: %v", path, gvk, err)
			}
			if _, err := dyn.Resource(m.Resource).Namespace(obj.GetNamespace()).Create(context.Background(), &obj,
				metav1.CreateOptions{FieldValidation: metav1.FieldValidationStrict}); err != nil {
				t.Fatalf("%s: create %s %s: %v", path, gvk.Kind, obj.GetName(), err)
			}
			n++
		}
	}
	if n == 0 {
		t.Fatalf("%s holds no objects", path)
	}
	if len(warnings) > 0 {
		t.Errorf("%s: the apiserver warned: %q", path, warnings)
	}
}

// warningList keeps the warnings of the apiserver's answers.
type warningList []string

func (w *warningList) HandleWarningHeaderWithContext(_ context.Context, code int, _ string, text string) {
	if code == 299 {
		*w = append(*w, text)
	}
}

func yamlUnmarshal(b []byte, v any) error { return yaml.Unmarshal(b, v) }

func yamlMarshal(v any) ([]byte, error) { return yaml.Marshal(v) }
