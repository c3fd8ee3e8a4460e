package cli

import (
	"encoding/json"
	"strings"
	"testing"
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
