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

// Without --mutate or --validate, admin test says which webhooks it
// called, and prints each one's answer.
func TestPrintChain(t *testing.T) {
	allowed := []byte(`{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","response":{"uid":"u","allowed":true}}`)
	patch := `[{"op":"add","path":"/metadata/labels","value":{"team":"shop"}}]`
	mutated := fmt.Appendf(nil, `{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","response":{"uid":"u","allowed":true,"patchType":"JSONPatch","patch":%q}}`,
		base64.StdEncoding.EncodeToString([]byte(patch)))
	denied := []byte(`{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","response":{"uid":"u","allowed":false,"status":{"code":403,"reason":"Invalid","message":"no"}}}`)
	object := []byte(`{"metadata":{"labels":{"team":"shop"}}}`)
	mtrace := []apiv1.BindingTrace{{Policy: "m", Binding: "m", Matched: true, Outcome: "Pass",
		Mutations: []apiv1.MutationTrace{{PatchType: "ApplyConfiguration", Expression: "Object{}", Changed: true, Cost: 3}}}}
	vtrace := []apiv1.BindingTrace{{Policy: "v", Binding: "v", Matched: true, Outcome: "Pass"}}
	tests := []struct {
		name    string
		res     apiv1.EvaluateResponse
		explain bool
		want    string
	}{
		{name: "no mutating policy matches",
			res:  apiv1.EvaluateResponse{Review: allowed, Evaluated: []string{"validate"}},
			want: "validating webhook (no MutatingAdmissionPolicy matches): allowed\n"},
		{name: "mutated, then validated",
			res: apiv1.EvaluateResponse{Review: denied, Object: object, Evaluated: []string{"mutate", "validate"},
				Mutation: &apiv1.EvaluateStep{Review: mutated}},
			want: "mutating webhook: allowed\npatch: " + patch + "\nobject after the mutations:\n{\n  \"metadata\": {\n    \"labels\": {\n      \"team\": \"shop\"\n    }\n  }\n}\n" +
				"validating webhook, on the mutated object: denied (403 Invalid): no\n"},
		{name: "the mutation denied",
			res:  apiv1.EvaluateResponse{Review: []byte("null"), Evaluated: []string{"mutate"}, Mutation: &apiv1.EvaluateStep{Review: denied}},
			want: "mutating webhook: denied (403 Invalid): no\nvalidating webhook: not called, the mutating webhook denied the request\n"},
		{name: "explained, both traces",
			res: apiv1.EvaluateResponse{Review: allowed, Trace: vtrace, Evaluated: []string{"mutate", "validate"}, SnapshotVersion: 4,
				Mutation: &apiv1.EvaluateStep{Review: allowed, Trace: mtrace}},
			explain: true,
			want: "mutating webhook: allowed\nvalidating webhook (the mutations changed nothing): allowed\n\npolicy version 4\n\nmutating webhook:\n" +
				"POLICY   BINDING   PARAM    MATCHED   OUTCOME   COST   REASON\nm        m         <none>   true      Pass      0      <none>\n\n" +
				"m (binding m):\n  mutation 0 (ApplyConfiguration): Object{}\n    = changed the object (cost 3)\n\nvalidating webhook:\n" +
				"POLICY   BINDING   PARAM    MATCHED   OUTCOME   COST   REASON\nv        v         <none>   true      Pass      0      <none>\n"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var out bytes.Buffer
			if err := printChain(&out, tc.res, tc.explain); err != nil {
				t.Fatal(err)
			}
			if out.String() != tc.want {
				t.Fatalf("printed:\n%q\nwant:\n%q", out.String(), tc.want)
			}
		})
	}
	// -o json prints both reviews when both webhooks were called.
	b, err := reviewsJSON(tests[1].res)
	var both map[string]json.RawMessage
	if err != nil || json.Unmarshal(b, &both) != nil || len(both) != 2 || both["mutating"] == nil || both["validating"] == nil {
		t.Fatalf("reviewsJSON: %s %v", b, err)
	}
	if b, _ := reviewsJSON(tests[0].res); !bytes.Contains(b, []byte(`"response"`)) || bytes.Contains(b, []byte(`"mutating"`)) {
		t.Fatalf("reviewsJSON of one review: %s", b)
	}
}
