package catalog

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	psaapi "k8s.io/pod-security-admission/api"

	"github.com/portcullis-dev/portcullis/internal/evaluator"
)

// TestExplicitNulls sends Pods whose JSON holds explicit nulls where Go
// would have left a field out (a client may send them; the library reads
// them as unset): each must get the library's verdict, on both paths.
func TestExplicitNulls(t *testing.T) {
	const ok = `"securityContext": {"allowPrivilegeEscalation": false, "runAsNonRoot": true, "seccompProfile": {"type": "RuntimeDefault"}, "capabilities": {"drop": ["ALL"]}}`
	containers := []string{
		`{"name": "c", "image": "i", "securityContext": null}`,
		`{"name": "c", "image": "i", ` + ok + `, "ports": null, "livenessProbe": null, "lifecycle": null}`,
		`{"name": "c", "image": "i", ` + ok + `, "ports": [{"containerPort": 80, "hostPort": null}]}`,
		`{"name": "c", "image": "i", "securityContext": {"allowPrivilegeEscalation": false, "runAsNonRoot": true, "seccompProfile": {"type": "RuntimeDefault"}, "capabilities": {"drop": ["ALL"], "add": null}, "privileged": null, "procMount": null, "seLinuxOptions": null, "appArmorProfile": null, "windowsOptions": null, "runAsUser": null}}`,
		`{"name": "c", "image": "i", "securityContext": {"allowPrivilegeEscalation": null, "runAsNonRoot": null, "seccompProfile": null, "capabilities": null}}`,
		`{"name": "c", "image": "i", ` + ok + `, "readinessProbe": {"httpGet": {"port": 80, "host": null}}}`,
		`{"name": "c", "image": "i", "securityContext": {"allowPrivilegeEscalation": false, "runAsNonRoot": true, "seccompProfile": {"type": "RuntimeDefault"}, "capabilities": {"drop": ["ALL"]}, "seLinuxOptions": {"type": null, "user": null}}}`,
		`{"name": "c", "image": "i", "securityContext": {"allowPrivilegeEscalation": false, "runAsNonRoot": true, "seccompProfile": {"type": "RuntimeDefault"}, "capabilities": {"drop": null}}}`,
		`{"name": "c", "image": "i", "securityContext": {"privileged": true, "capabilities": null, "seccompProfile": null}}`,
	}
	specs := []string{
		`"securityContext": null, "volumes": null, "initContainers": null, "ephemeralContainers": null, "hostNetwork": null, "os": null, "hostUsers": null`,
		`"securityContext": {"runAsNonRoot": null, "seccompProfile": null, "sysctls": null, "seLinuxOptions": null, "appArmorProfile": null, "windowsOptions": null}`,
		`"securityContext": {"sysctls": [{"name": "net.ipv4.tcp_syncookies", "value": null}]}, "volumes": [{"name": "v", "emptyDir": null, "hostPath": null}]`,
		`"volumes": [{"name": "v", "configMap": null, "secret": {"secretName": "s"}}], "os": {"name": null}`,
		`"volumes": [{"name": "v", "hostPath": {"path": "/"}, "emptyDir": null}], "hostPID": null`,
	}
	var pods []string
	for _, c := range containers {
		for _, s := range specs {
			pods = append(pods, `{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "team-a", "annotations": null, "labels": null},
			  "spec": {`+s+`, "containers": [`+c+`]}}`)
		}
	}
	o := newOracle(t)
	for _, level := range []psaapi.Level{psaapi.LevelBaseline, psaapi.LevelRestricted} {
		s, _ := snapshot(t, "pod-security-"+string(level))
		var denied int
		for _, js := range pods {
			var p corev1.Pod
			if err := json.Unmarshal([]byte(js), &p); err != nil {
				t.Fatalf("%s: %v", js, err)
			}
			want, why := o.allowed(level, pod{meta: p.ObjectMeta, spec: p.Spec})
			if !want {
				denied++
			}
			obj, err := evaluator.DecodeObject([]byte(js))
			if err != nil {
				t.Fatal(err)
			}
			req := &evaluator.Request{Kind: kinds[0].gvk, Resource: kinds[0].gvk.GroupVersion().WithResource("pods"), Name: "p", Namespace: "team-a",
				Operation: admissionregistrationv1.Create, Object: obj}
			for path, res := range []*evaluator.Result{s.Evaluate(context.Background(), evaluator.Validating, req), s.Evaluate(context.Background(), evaluator.Validating, req, evaluator.WithTrace())} {
				var errs []string
				for _, br := range res.Bindings {
					if br.Outcome == evaluator.OutcomeError {
						errs = append(errs, br.Error)
					}
				}
				if res.Allowed != want || len(errs) > 0 {
					t.Errorf("%s (path %d): library allowed=%v (%s), catalog allowed=%v, errors %v\n%s", level, path, want, strings.Join(why, ", "), res.Allowed, errs, js)
				}
			}
		}
		if denied == 0 || denied == len(pods) {
			t.Errorf("%s: %d of %d denied: the cases must be both allowed and denied", level, denied, len(pods))
		}
	}
}
