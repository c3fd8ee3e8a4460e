package catalog

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	psaapi "k8s.io/pod-security-admission/api"
	"k8s.io/pod-security-admission/policy"

	"github.com/portcullis-dev/portcullis/internal/catalog"
	"github.com/portcullis-dev/portcullis/internal/evaluator"
)

// objectsPerLevel is how many generated objects each level is tried on,
// besides the fixed edge cases.
const objectsPerLevel = 6000

// snapshot compiles a catalog entry as installed with the defaults, in the
// NewExpressions environment a write is checked with.
func snapshot(t testing.TB, name string) (*evaluator.Snapshot, evaluator.Objects) {
	t.Helper()
	e, ok := catalog.Get(name)
	if !ok {
		t.Fatalf("no catalog entry %s", name)
	}
	maps, err := e.Objects(catalog.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var objs evaluator.Objects
	for _, m := range maps {
		if m["kind"] == "ConfigMap" {
			objs.Params = append(objs.Params, &unstructured.Unstructured{Object: m})
			continue
		}
		js, _ := json.Marshal(m)
		switch m["kind"] {
		case "ValidatingAdmissionPolicy":
			p := &admissionregistrationv1.ValidatingAdmissionPolicy{}
			mustUnmarshal(t, js, p)
			evaluator.SetPolicyDefaults(p)
			objs.Policies = append(objs.Policies, p)
		case "ValidatingAdmissionPolicyBinding":
			b := &admissionregistrationv1.ValidatingAdmissionPolicyBinding{}
			mustUnmarshal(t, js, b)
			evaluator.SetBindingDefaults(b)
			objs.Bindings = append(objs.Bindings, b)
		default:
			t.Fatalf("%s: unexpected kind %v", name, m["kind"])
		}
	}
	s := evaluator.Compile(objs, evaluator.CompileOptions{Mode: evaluator.NewExpressions})
	for _, ce := range s.CompileErrors() {
		t.Errorf("%s: %v", name, ce)
	}
	return s, objs
}

func mustUnmarshal(t testing.TB, js []byte, v any) {
	t.Helper()
	if err := json.Unmarshal(js, v); err != nil {
		t.Fatal(err)
	}
}

// A workload kind that carries a pod template, and how to wrap one in it.
type kind struct {
	gvk      schema.GroupVersionKind
	resource string
	sub      string // "ephemeralcontainers": an UPDATE of that subresource
	wrap     func(p pod) any
}

func tmpl(p pod) corev1.PodTemplateSpec {
	return corev1.PodTemplateSpec{ObjectMeta: p.meta, Spec: p.spec}
}

func objMeta() metav1.ObjectMeta { return metav1.ObjectMeta{Name: "w", Namespace: "team-a"} }

var kinds = []kind{
	{schema.GroupVersionKind{Version: "v1", Kind: "Pod"}, "pods", "", func(p pod) any {
		m := p.meta
		m.Namespace = "team-a"
		return &corev1.Pod{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"}, ObjectMeta: m, Spec: p.spec}
	}},
	{schema.GroupVersionKind{Version: "v1", Kind: "Pod"}, "pods", "ephemeralcontainers", func(p pod) any {
		m := p.meta
		m.Namespace = "team-a"
		return &corev1.Pod{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"}, ObjectMeta: m, Spec: p.spec}
	}},
	{schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"}, "deployments", "", func(p pod) any {
		return &appsv1.Deployment{TypeMeta: metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"}, ObjectMeta: objMeta(), Spec: appsv1.DeploymentSpec{Template: tmpl(p)}}
	}},
	{schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "StatefulSet"}, "statefulsets", "", func(p pod) any {
		return &appsv1.StatefulSet{TypeMeta: metav1.TypeMeta{APIVersion: "apps/v1", Kind: "StatefulSet"}, ObjectMeta: objMeta(), Spec: appsv1.StatefulSetSpec{Template: tmpl(p)}}
	}},
	{schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "DaemonSet"}, "daemonsets", "", func(p pod) any {
		return &appsv1.DaemonSet{TypeMeta: metav1.TypeMeta{APIVersion: "apps/v1", Kind: "DaemonSet"}, ObjectMeta: objMeta(), Spec: appsv1.DaemonSetSpec{Template: tmpl(p)}}
	}},
	{schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "ReplicaSet"}, "replicasets", "", func(p pod) any {
		return &appsv1.ReplicaSet{TypeMeta: metav1.TypeMeta{APIVersion: "apps/v1", Kind: "ReplicaSet"}, ObjectMeta: objMeta(), Spec: appsv1.ReplicaSetSpec{Template: tmpl(p)}}
	}},
	{schema.GroupVersionKind{Version: "v1", Kind: "ReplicationController"}, "replicationcontrollers", "", func(p pod) any {
		t := tmpl(p)
		return &corev1.ReplicationController{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ReplicationController"}, ObjectMeta: objMeta(), Spec: corev1.ReplicationControllerSpec{Template: &t}}
	}},
	{schema.GroupVersionKind{Group: "batch", Version: "v1", Kind: "Job"}, "jobs", "", func(p pod) any {
		return &batchv1.Job{TypeMeta: metav1.TypeMeta{APIVersion: "batch/v1", Kind: "Job"}, ObjectMeta: objMeta(), Spec: batchv1.JobSpec{Template: tmpl(p)}}
	}},
	{schema.GroupVersionKind{Group: "batch", Version: "v1", Kind: "CronJob"}, "cronjobs", "", func(p pod) any {
		return &batchv1.CronJob{TypeMeta: metav1.TypeMeta{APIVersion: "batch/v1", Kind: "CronJob"}, ObjectMeta: objMeta(),
			Spec: batchv1.CronJobSpec{Schedule: "* * * * *", JobTemplate: batchv1.JobTemplateSpec{Spec: batchv1.JobSpec{Template: tmpl(p)}}}}
	}},
	{schema.GroupVersionKind{Version: "v1", Kind: "PodTemplate"}, "podtemplates", "", func(p pod) any {
		return &corev1.PodTemplate{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "PodTemplate"}, ObjectMeta: objMeta(), Template: tmpl(p)}
	}},
}

// request is the admission request for a pod wrapped in kind k.
func request(t testing.TB, k kind, p pod) *evaluator.Request {
	t.Helper()
	js, err := json.Marshal(k.wrap(p))
	if err != nil {
		t.Fatal(err)
	}
	obj, err := evaluator.DecodeObject(js)
	if err != nil {
		t.Fatal(err)
	}
	req := &evaluator.Request{UID: "u", Kind: k.gvk, Resource: k.gvk.GroupVersion().WithResource(k.resource), SubResource: k.sub,
		Name: "w", Namespace: "team-a", Operation: admissionregistrationv1.Create, Object: obj}
	if k.sub != "" {
		// kubectl debug: the Pod as it was, and with the ephemeral
		// containers added.
		old := p
		old.spec.EphemeralContainers = nil
		oldJS, _ := json.Marshal(k.wrap(old))
		req.OldObject, _ = evaluator.DecodeObject(oldJS)
		req.Operation = admissionregistrationv1.Update
	}
	return req
}

// oracle is the PodSecurity admission library at version latest.
type oracle struct{ ev policy.Evaluator }

func newOracle(t testing.TB) oracle {
	ev, err := policy.NewEvaluator(policy.DefaultChecks(), nil)
	if err != nil {
		t.Fatal(err)
	}
	return oracle{ev}
}

// allowed is the library's verdict and, when it denies, its reasons.
func (o oracle) allowed(level psaapi.Level, p pod) (bool, []string) {
	var reasons []string
	for _, r := range o.ev.EvaluatePod(psaapi.LevelVersion{Level: level, Version: psaapi.LatestVersion()}, &p.meta, &p.spec) {
		if !r.Allowed {
			reasons = append(reasons, r.ForbiddenReason)
		}
	}
	return len(reasons) == 0, reasons
}

type verdicts struct {
	tried, denied, disagreements int
	byKind                       map[string]int
	// decisive counts, per library reason, the objects it alone denied.
	decisive map[string]int
}

// check evaluates one object both ways and reports a disagreement.
func check(t *testing.T, s *evaluator.Snapshot, o oracle, level psaapi.Level, k kind, p pod, v *verdicts, what string) {
	t.Helper()
	want, why := o.allowed(level, p)
	res := s.Evaluate(context.Background(), evaluator.Validating, request(t, k, p))
	v.tried++
	v.byKind[k.gvk.Kind+"/"+k.sub]++
	if !want {
		v.denied++
	}
	if len(why) == 1 {
		r := why[0]
		if strings.HasPrefix(r, "forbidden AppArmor profile") {
			r = "forbidden AppArmor profile"
		}
		v.decisive[r]++
	}
	// With a trace the evaluator leaves the fast interpreter out: cel-go
	// alone, on the typed view of the object, must agree too.
	exact := s.Evaluate(context.Background(), evaluator.Validating, request(t, k, p), evaluator.WithTrace())
	var errs []string
	for _, br := range append(res.Bindings, exact.Bindings...) {
		if br.Outcome == evaluator.OutcomeError {
			errs = append(errs, br.Error)
		}
	}
	if res.Allowed == want && exact.Allowed == want && len(errs) == 0 {
		return
	}
	v.disagreements++
	if v.disagreements > 20 {
		return
	}
	js, _ := json.Marshal(k.wrap(p))
	msg := ""
	if res.Status != nil {
		msg = res.Status.Message
	}
	t.Errorf("%s %s (%s): library allowed=%v (%v), catalog allowed=%v (%s), without the fast interpreter %v; errors=%v\n%s",
		level, k.gvk.Kind, what, want, why, res.Allowed, msg, exact.Allowed, errs, js)
}

// TestCatalogMatchesPodSecurityAdmission holds the catalog's Pod Security
// entries to the PodSecurity admission library: the same verdict for every
// generated Pod and workload, at both levels, version latest.
func TestCatalogMatchesPodSecurityAdmission(t *testing.T) {
	o := newOracle(t)
	for _, level := range []psaapi.Level{psaapi.LevelBaseline, psaapi.LevelRestricted} {
		t.Run(string(level), func(t *testing.T) {
			s, _ := snapshot(t, "pod-security-"+string(level))
			v := &verdicts{byKind: map[string]int{}, decisive: map[string]int{}}
			for i, p := range edgeCases() {
				for _, k := range kinds {
					check(t, s, o, level, k, p, v, fmt.Sprintf("edge case %d", i))
				}
			}
			g := gen{rand.New(rand.NewPCG(24, uint64(len(level))))}
			for i := range objectsPerLevel {
				p := g.pod()
				k := kinds[g.pick(len(kinds))]
				if len(p.spec.EphemeralContainers) > 0 && g.chance(0.3) {
					k = kinds[1]
				}
				check(t, s, o, level, k, p, v, fmt.Sprintf("object %d", i))
			}
			if v.denied == 0 || v.denied == v.tried {
				t.Errorf("the generated objects must be both allowed and denied: %d of %d denied", v.denied, v.tried)
			}
			// Every control must have been the only reason of some denials,
			// so that a check that denies too little or too much shows.
			for _, r := range controls[level] {
				if v.decisive[r] < 10 {
					t.Errorf("%s: only %d objects were denied by %q alone", level, v.decisive[r], r)
				}
			}
			t.Logf("%s: %d objects tried (%d denied by the library), %d disagreements; by kind %v; denied by one control alone %v",
				level, v.tried, v.denied, v.disagreements, v.byKind, v.decisive)
		})
	}
}

// edgeCases are objects an API server would refuse before admission, or
// that hold fields at their zero values: each must still get the library's
// verdict.
func edgeCases() []pod {
	ok := func() pod {
		return pod{meta: metav1.ObjectMeta{Name: "p"}, spec: corev1.PodSpec{Containers: []corev1.Container{compliant("c")}}}
	}
	var out []pod
	add := func(f func(p *pod)) {
		p := ok()
		f(&p)
		out = append(out, p)
	}
	add(func(p *pod) {})
	add(func(p *pod) { p.spec.Containers = nil })                       // no containers at all
	add(func(p *pod) { p.spec.Containers = []corev1.Container{} })      // an empty list
	add(func(p *pod) { p.spec.Containers = []corev1.Container{{}} })    // a container with nothing set
	add(func(p *pod) { p.spec.Volumes = []corev1.Volume{{Name: "v"}} }) // a volume with no source
	add(func(p *pod) { p.spec.Volumes = []corev1.Volume{{}} })
	add(func(p *pod) {
		p.spec.EphemeralContainers = []corev1.EphemeralContainer{{EphemeralContainerCommon: corev1.EphemeralContainerCommon{Name: "debug", Image: "busybox"}}}
	})
	add(func(p *pod) {
		e := corev1.EphemeralContainerCommon(compliant("debug"))
		p.spec.EphemeralContainers = []corev1.EphemeralContainer{{EphemeralContainerCommon: e, TargetContainerName: "c"}}
	})
	add(func(p *pod) { p.spec.SecurityContext = &corev1.PodSecurityContext{} })
	add(func(p *pod) { p.spec.Containers[0].SecurityContext = &corev1.SecurityContext{} })
	add(func(p *pod) { p.spec.Containers[0].SecurityContext = nil })
	add(func(p *pod) { p.spec.Containers[0].SecurityContext.Capabilities = &corev1.Capabilities{} })
	add(func(p *pod) { p.spec.Containers[0].SecurityContext.SeccompProfile = &corev1.SeccompProfile{} })
	add(func(p *pod) { p.spec.Containers[0].SecurityContext.ProcMount = ptr(corev1.ProcMountType("")) })
	add(func(p *pod) { p.spec.Containers[0].SecurityContext.SELinuxOptions = &corev1.SELinuxOptions{} })
	add(func(p *pod) { p.spec.Containers[0].SecurityContext.AppArmorProfile = &corev1.AppArmorProfile{} })
	add(func(p *pod) {
		p.spec.Containers[0].SecurityContext.WindowsOptions = &corev1.WindowsSecurityContextOptions{}
	})
	add(func(p *pod) { p.spec.SecurityContext = &corev1.PodSecurityContext{Sysctls: []corev1.Sysctl{{}}} })
	add(func(p *pod) { p.spec.Containers[0].Ports = []corev1.ContainerPort{{}} })
	add(func(p *pod) { p.spec.Containers[0].LivenessProbe = &corev1.Probe{} })
	add(func(p *pod) {
		p.spec.Containers[0].Lifecycle = &corev1.Lifecycle{PostStart: &corev1.LifecycleHandler{}}
	})
	add(func(p *pod) { p.meta.Annotations = map[string]string{} })
	add(func(p *pod) {
		p.meta.Annotations = map[string]string{"container.apparmor.security.beta.kubernetes.io/c": ""}
	})
	add(func(p *pod) { p.spec.OS = &corev1.PodOS{} })
	add(func(p *pod) {
		p.spec.OS = &corev1.PodOS{Name: corev1.Windows}
		p.spec.Containers[0].SecurityContext = &corev1.SecurityContext{Capabilities: &corev1.Capabilities{Add: []corev1.Capability{"SYS_ADMIN"}}}
	})
	add(func(p *pod) {
		p.spec.HostUsers = ptr(false)
		p.spec.Containers[0].SecurityContext.ProcMount = ptr(corev1.UnmaskedProcMount)
		p.spec.Containers[0].SecurityContext.RunAsNonRoot = nil
		p.spec.Containers[0].SecurityContext.RunAsUser = ptr[int64](0)
	})
	return out
}

// controls are the library's forbidden reasons at each level, version
// latest: one per check.
var controls = map[psaapi.Level][]string{
	psaapi.LevelBaseline: {"hostProcess", "host namespaces", "privileged", "non-default capabilities", "hostPath volumes",
		"hostPort", "probe or lifecycle host", "forbidden AppArmor profile", "seLinuxOptions", "procMount", "seccompProfile",
		"forbidden sysctls"},
	psaapi.LevelRestricted: {"hostProcess", "host namespaces", "privileged", "hostPort", "probe or lifecycle host",
		"forbidden AppArmor profile", "seLinuxOptions", "procMount", "forbidden sysctls", "restricted volume types",
		"allowPrivilegeEscalation != false", "unrestricted capabilities", "runAsNonRoot != true", "runAsUser=0", "seccompProfile"},
}

// TestReplicationControllerWithoutTemplate: a ReplicationController may
// have no pod template; PodSecurity admission finds no pod to check and
// allows it, and so must the catalog (without an evaluation error).
func TestReplicationControllerWithoutTemplate(t *testing.T) {
	rc := &corev1.ReplicationController{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ReplicationController"}, ObjectMeta: objMeta()}
	js, _ := json.Marshal(rc)
	obj, err := evaluator.DecodeObject(js)
	if err != nil {
		t.Fatal(err)
	}
	gvk := rc.GroupVersionKind()
	for _, name := range []string{"pod-security-baseline", "pod-security-restricted"} {
		s, _ := snapshot(t, name)
		res := s.Evaluate(context.Background(), evaluator.Validating, &evaluator.Request{Kind: gvk, Resource: gvk.GroupVersion().WithResource("replicationcontrollers"),
			Name: "w", Namespace: "team-a", Operation: admissionregistrationv1.Create, Object: obj})
		if !res.Allowed || len(res.Bindings) != 1 || res.Bindings[0].Outcome != evaluator.OutcomePass {
			t.Errorf("%s: %+v", name, res)
		}
	}
}
