package catalog

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/portcullis-dev/portcullis/internal/evaluator"
)

// compileEntry compiles an entry as installed with the defaults.
func compileEntry(t *testing.T, name string) *evaluator.Snapshot {
	t.Helper()
	e, ok := Get(name)
	if !ok {
		t.Fatalf("no entry %s", name)
	}
	maps, err := e.Objects(Options{})
	if err != nil {
		t.Fatal(err)
	}
	var objs evaluator.Objects
	for _, m := range maps {
		js, _ := json.Marshal(m)
		switch m["kind"] {
		case "ValidatingAdmissionPolicy":
			p := &admissionregistrationv1.ValidatingAdmissionPolicy{}
			unmarshal(t, js, p)
			evaluator.SetPolicyDefaults(p)
			objs.Policies = append(objs.Policies, p)
		case "ValidatingAdmissionPolicyBinding":
			b := &admissionregistrationv1.ValidatingAdmissionPolicyBinding{}
			unmarshal(t, js, b)
			evaluator.SetBindingDefaults(b)
			objs.Bindings = append(objs.Bindings, b)
		default:
			objs.Params = append(objs.Params, &unstructured.Unstructured{Object: m})
		}
	}
	return evaluator.Compile(objs, evaluator.CompileOptions{Mode: evaluator.NewExpressions})
}

const goodContainer = `{"name": "app", "image": "registry.example.com/app:1.2",
  "resources": {"requests": {"cpu": "1", "memory": "1Gi"}, "limits": {"cpu": "1", "memory": "1Gi"}},
  "livenessProbe": {"httpGet": {"port": 8080}}, "readinessProbe": {"httpGet": {"port": 8080}},
  "securityContext": {"readOnlyRootFilesystem": true, "runAsNonRoot": true}}`

func pod(containers string) string {
	return `{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "shop", "labels": {"app": "a", "team": "t"}},
  "spec": {"containers": [` + containers + `]}}`
}

func deployment(labels, containers string) string {
	return `{"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d", "namespace": "shop"},
  "spec": {"replicas": 3, "selector": {}, "template": {"metadata": {"labels": ` + labels + `}, "spec": {"containers": [` + containers + `]}}}}`
}

// with is goodContainer with one field replaced (null: removed).
func with(field string) string {
	var c, f map[string]any
	if err := json.Unmarshal([]byte(goodContainer), &c); err != nil {
		panic(err)
	}
	if err := json.Unmarshal([]byte("{"+field+"}"), &f); err != nil {
		panic(err)
	}
	for k, v := range f {
		if v == nil {
			delete(c, k)
		} else {
			c[k] = v
		}
	}
	js, _ := json.Marshal(c)
	return string(js)
}

// TestBestPracticeEntries evaluates each best-practice entry, installed with
// its default params, on objects it must allow and deny, Pods and
// workloads alike; a denial's message says what to change.
func TestBestPracticeEntries(t *testing.T) {
	type tc struct {
		entry, resource, object string
		deny                    string // a piece of the denial's message; empty: allowed
	}
	cases := []tc{}
	for _, e := range List() {
		if e.Category == "best-practice" && e.Name != "disallow-nodeport-services" && e.Name != "restrict-ingress-classes" && e.Name != "max-replicas" {
			cases = append(cases, tc{e.Name, "pods", pod(goodContainer), ""},
				tc{e.Name, "deployments", deployment(`{"app": "a", "team": "t"}`, goodContainer), ""})
		}
	}
	cases = append(cases,
		tc{"disallow-privileged-containers", "pods", pod(with(`"securityContext": {"privileged": true}`)), "containers app must not set securityContext.privileged=true"},
		tc{"disallow-privileged-containers", "deployments", deployment(`{}`, with(`"securityContext": {"privileged": true}`)), "privileged=true"},
		tc{"disallow-host-namespaces", "pods", strings.Replace(pod(goodContainer), `"spec": {`, `"spec": {"hostPID": true, `, 1), "hostPID must not be true"},
		tc{"require-run-as-non-root", "pods", pod(with(`"securityContext": {}`)), "containers app may run as root"},
		tc{"require-labels", "pods", strings.Replace(pod(goodContainer), `"team": "t"`, `"team": ""`, 1), "missing required labels: team"},
		tc{"require-labels", "deployments", deployment(`{"app": "a"}`, goodContainer), "missing required labels: team"},
		tc{"trusted-registries", "pods", pod(with(`"image": "docker.io/evil:1"`)), "app (docker.io/evil:1)"},
		tc{"trusted-registries", "pods", pod(with(`"image": "registry.example.com.evil.io/x:1"`)), "untrusted"},
		tc{"disallow-latest-tag", "pods", pod(with(`"image": "registry.example.com/app:latest"`)), "use a tag other than latest"},
		tc{"disallow-latest-tag", "pods", pod(with(`"image": "registry.example.com/app"`)), "app (registry.example.com/app)"},
		tc{"disallow-latest-tag", "pods", pod(with(`"image": "registry.example.com:5000/app@sha256:abc"`)), ""},
		tc{"require-requests-limits", "pods", pod(with(`"resources": {"limits": {"cpu": "1", "memory": "1Gi"}}`)), "must set resources.requests and resources.limits"},
		tc{"require-read-only-root-filesystem", "pods", pod(with(`"securityContext": {"runAsNonRoot": true}`)), "readOnlyRootFilesystem=true"},
		tc{"restrict-capabilities", "pods", pod(with(`"securityContext": {"capabilities": {"add": ["NET_BIND_SERVICE"]}}`)), ""},
		tc{"restrict-capabilities", "pods", pod(with(`"securityContext": {"capabilities": {"add": ["NET_ADMIN"]}}`)), "may hold only NET_BIND_SERVICE"},
		tc{"restrict-capabilities", "pods", pod(with(`"securityContext": {"capabilities": {"add": ["NET_BIND_SERVICE,SYS_ADMIN"]}}`)), "not allowed"},
		tc{"require-probes", "pods", pod(with(`"livenessProbe": null`)), "must set both livenessProbe and readinessProbe"},
		// An explicit null is no probe, on the fast path too.
		tc{"require-probes", "pods", pod(strings.Replace(goodContainer, `"livenessProbe": {"httpGet": {"port": 8080}}`, `"livenessProbe": null`, 1)), "must set both"},
		tc{"disallow-default-namespace", "pods", strings.Replace(pod(goodContainer), `"shop"`, `"default"`, 1), "not for workloads"},
		tc{"disallow-default-namespace", "deployments", strings.Replace(deployment(`{}`, goodContainer), `"shop"`, `"default"`, 1), "not for workloads"},
		tc{"max-replicas", "deployments", deployment(`{}`, goodContainer), ""},
		tc{"max-replicas", "deployments", strings.Replace(deployment(`{}`, goodContainer), `"replicas": 3`, `"replicas": 51`, 1), "spec.replicas is 51; at most 50"},
		tc{"disallow-nodeport-services", "services", `{"apiVersion": "v1", "kind": "Service", "metadata": {"name": "s", "namespace": "shop"}, "spec": {"type": "NodePort"}}`, "NodePort are not allowed"},
		tc{"disallow-nodeport-services", "services", `{"apiVersion": "v1", "kind": "Service", "metadata": {"name": "s", "namespace": "shop"}, "spec": {}}`, ""},
		tc{"restrict-ingress-classes", "ingresses", `{"apiVersion": "networking.k8s.io/v1", "kind": "Ingress", "metadata": {"name": "i", "namespace": "shop"}, "spec": {"ingressClassName": "nginx"}}`, ""},
		tc{"restrict-ingress-classes", "ingresses", `{"apiVersion": "networking.k8s.io/v1", "kind": "Ingress", "metadata": {"name": "i", "namespace": "shop", "annotations": {"kubernetes.io/ingress.class": "nginx"}}, "spec": {}}`, ""},
		tc{"restrict-ingress-classes", "ingresses", `{"apiVersion": "networking.k8s.io/v1", "kind": "Ingress", "metadata": {"name": "i", "namespace": "shop"}, "spec": {"ingressClassName": "traefik"}}`, "ingress class traefik is not allowed: set spec.ingressClassName to one of nginx"},
		tc{"restrict-ingress-classes", "ingresses", `{"apiVersion": "networking.k8s.io/v1", "kind": "Ingress", "metadata": {"name": "i", "namespace": "shop"}, "spec": {}}`, "the ingress names no class"},
	)
	snaps := map[string]*evaluator.Snapshot{}
	for _, c := range cases {
		s := snaps[c.entry]
		if s == nil {
			s = compileEntry(t, c.entry)
			snaps[c.entry] = s
		}
		obj, err := evaluator.DecodeObject([]byte(c.object))
		if err != nil {
			t.Fatalf("%s: %v", c.object, err)
		}
		gv, _ := schema.ParseGroupVersion(obj["apiVersion"].(string))
		req := &evaluator.Request{Kind: gv.WithKind(obj["kind"].(string)), Resource: gv.WithResource(c.resource), Operation: admissionregistrationv1.Create,
			Name: "x", Namespace: obj["metadata"].(map[string]any)["namespace"].(string), Object: obj}
		res := s.Evaluate(context.Background(), evaluator.Validating, req)
		for _, br := range res.Bindings {
			if br.Outcome == evaluator.OutcomeError {
				t.Errorf("%s on %s: %s", c.entry, c.object, br.Error)
			}
		}
		switch {
		case c.deny == "" && !res.Allowed:
			t.Errorf("%s denied %s: %s", c.entry, c.object, res.Status.Message)
		case c.deny != "" && res.Allowed:
			t.Errorf("%s allowed %s", c.entry, c.object)
		case c.deny != "" && !strings.Contains(res.Status.Message, c.deny):
			t.Errorf("%s: message %q lacks %q", c.entry, res.Status.Message, c.deny)
		}
	}
}
