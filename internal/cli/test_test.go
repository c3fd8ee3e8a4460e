package cli

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/portcullis-dev/portcullis/internal/apiv1"
)

func TestPlural(t *testing.T) {
	for kind, want := range map[string]string{"Pod": "pods", "Ingress": "ingresses", "NetworkPolicy": "networkpolicies",
		"Gateway": "gateways", "ConfigMap": "configmaps", "Deployment": "deployments"} {
		if got := plural(kind); got != want {
			t.Errorf("plural(%s) = %s, want %s", kind, got, want)
		}
	}
}

func TestBareObjectIsReviewedAsCreate(t *testing.T) {
	docs, err := splitDocuments("pod.yaml", []byte("apiVersion: v1\nkind: Pod\nmetadata: {name: web, namespace: shop}\nspec: {containers: [{name: c, image: nginx}]}\n"))
	if err != nil || len(docs) != 1 {
		t.Fatal(err)
	}
	b, err := asReview(docs[0])
	if err != nil {
		t.Fatal(err)
	}
	var rv struct {
		APIVersion, Kind string
		Request          struct {
			UID, Name, Namespace, Operation string
			Kind                            struct{ Group, Version, Kind string }
			Resource                        struct{ Group, Version, Resource string }
			Object                          struct{ Metadata struct{ Name string } }
		}
	}
	if err := json.Unmarshal(b, &rv); err != nil {
		t.Fatal(err)
	}
	r := rv.Request
	if rv.Kind != "AdmissionReview" || rv.APIVersion != "admission.k8s.io/v1" || r.UID == "" || r.Operation != "CREATE" ||
		r.Name != "web" || r.Namespace != "shop" || r.Kind.Kind != "Pod" || r.Kind.Version != "v1" || r.Resource.Resource != "pods" ||
		r.Object.Metadata.Name != "web" {
		t.Fatalf("review %s", b)
	}
	// An AdmissionReview is sent as it is.
	docs, _ = splitDocuments("r.json", []byte(`{"apiVersion":"admission.k8s.io/v1beta1","kind":"AdmissionReview","request":{"uid":"x"}}`))
	if b, _ := asReview(docs[0]); !strings.Contains(string(b), `"admission.k8s.io/v1beta1"`) {
		t.Fatalf("review %s", b)
	}
}

// A mutating answer prints its patch and the object it makes.
func TestPrintEvaluationOfAMutation(t *testing.T) {
	patch := `[{"op":"add","path":"/metadata/labels","value":{"team":"shop"}}]`
	review := fmt.Appendf(nil, `{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","response":{"uid":"u","allowed":true,"patchType":"JSONPatch","patch":%q}}`,
		base64.StdEncoding.EncodeToString([]byte(patch)))
	res := apiv1.EvaluateResponse{Review: review, Object: []byte(`{"metadata":{"labels":{"team":"shop"}}}`)}
	var out bytes.Buffer
	if err := printEvaluation(&out, res, false); err != nil {
		t.Fatal(err)
	}
	want := "allowed\npatch: " + patch + "\nobject after the mutations:\n{\n  \"metadata\": {\n    \"labels\": {\n      \"team\": \"shop\"\n    }\n  }\n}\n"
	if out.String() != want {
		t.Fatalf("printed:\n%s\nwant:\n%s", out.String(), want)
	}
	res.Object = []byte(`{"metadata":`)
	if err := printEvaluation(&out, res, false); err == nil || !strings.Contains(err.Error(), "object") {
		t.Fatalf("a truncated object: %v", err)
	}
}

// --explain shows each mutation's outcome, and marks the second pass.
func TestPrintEvaluationExplainsMutations(t *testing.T) {
	review := []byte(`{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","response":{"uid":"u","allowed":true}}`)
	ms := []apiv1.MutationTrace{
		{Index: 0, PatchType: "ApplyConfiguration", Expression: "Object{}\n", Changed: true, Cost: 7},
		{Index: 1, PatchType: "ApplyConfiguration", Expression: "Object{}", Cost: 2},
		{Index: 2, PatchType: "JSONPatch", Expression: "[]", Error: "JSON Patch: missing value"},
	}
	res := apiv1.EvaluateResponse{Review: review, SnapshotVersion: 3, Trace: []apiv1.BindingTrace{
		{Policy: "p", Binding: "b", Matched: true, Outcome: "Pass", Cost: 9, Mutations: ms},
		{Policy: "p", Binding: "b", Matched: true, Outcome: "Pass", Cost: 9, Mutations: ms[:1], Reinvoked: true},
	}}
	var out bytes.Buffer
	if err := printEvaluation(&out, res, true); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"Pass, reinvoked",
		"p (binding b):\n" +
			"  mutation 0 (ApplyConfiguration): Object{}\n    = changed the object (cost 7)\n" +
			"  mutation 1 (ApplyConfiguration): Object{}\n    = unchanged (cost 2)\n" +
			"  mutation 2 (JSONPatch): []\n    = error: JSON Patch: missing value (cost 0)\n",
		"p (binding b, reinvoked):\n  mutation 0 (ApplyConfiguration): Object{}\n    = changed the object (cost 7)\n",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("no %q in:\n%s", want, out.String())
		}
	}
}
