package chart

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/pod-security-admission/api"
	"k8s.io/pod-security-admission/policy"
)

// podSpecs are the pod templates of every workload rendered, hooks
// included.
func podSpecs(t *testing.T, objs []object) map[string]*corev1.PodTemplateSpec {
	out := map[string]*corev1.PodTemplateSpec{}
	for _, o := range objs {
		switch w := o.typed.(type) {
		case *appsv1.Deployment:
			out["Deployment/"+o.name] = &w.Spec.Template
		case *batchv1.Job:
			out["Job/"+o.name] = &w.Spec.Template
		case *appsv1.StatefulSet, *appsv1.DaemonSet, *batchv1.CronJob, *corev1.Pod:
			t.Fatalf("the chart renders a %s: check it here too", o.gvk.Kind)
		}
	}
	return out
}

// Every pod the chart runs, the migration hook included, passes the Pod
// Security Standards at "restricted" (latest), so it installs into a
// namespace that enforces them.
func TestPodsAreRestricted(t *testing.T) {
	eval, err := policy.NewEvaluator(policy.DefaultChecks(), nil)
	if err != nil {
		t.Fatal(err)
	}
	lv := api.LevelVersion{Level: api.LevelRestricted, Version: api.LatestVersion()}
	for name, sets := range map[string][]string{"defaults": nil, "realistic": realistic} {
		specs := podSpecs(t, render(t, sets...))
		if len(specs) != 2 {
			t.Fatalf("%s: %d pod templates (%v), want the Deployment and the migration Job", name, len(specs), specs)
		}
		for what, tmpl := range specs {
			for _, r := range eval.EvaluatePod(lv, &tmpl.ObjectMeta, &tmpl.Spec) {
				if !r.Allowed {
					t.Errorf("%s: %s is not restricted: %s: %s", name, what, r.ForbiddenReason, r.ForbiddenDetail)
				}
			}
		}
	}
}

func container(t *testing.T, tmpl *corev1.PodTemplateSpec, name string) *corev1.Container {
	t.Helper()
	for i := range tmpl.Spec.Containers {
		if tmpl.Spec.Containers[i].Name == name {
			return &tmpl.Spec.Containers[i]
		}
	}
	t.Fatalf("no container %q", name)
	return nil
}

func TestDefaults(t *testing.T) {
	objs := render(t)
	dep := one(t, objs, "Deployment").typed.(*appsv1.Deployment)
	pod := &dep.Spec.Template
	gw := container(t, pod, "gateway")

	// Three Services: the webhook is the only one meant for remote
	// apiservers; each carries one port, so exposing it publishes nothing
	// else; admin and metrics stay ClusterIP.
	svcs := map[string]*corev1.Service{}
	for _, o := range find(objs, "Service") {
		s := o.typed.(*corev1.Service)
		svcs[s.Labels["app.kubernetes.io/component"]] = s
	}
	for _, role := range []string{"webhook", "admin", "metrics"} {
		s := svcs[role]
		if s == nil {
			t.Fatalf("no %s Service", role)
		}
		if len(s.Spec.Ports) != 1 || s.Spec.Ports[0].TargetPort.StrVal != role || s.Spec.Type != corev1.ServiceTypeClusterIP {
			t.Errorf("%s Service: type %s, ports %+v", role, s.Spec.Type, s.Spec.Ports)
		}
		// The web UI's sessions are in the database, so any replica
		// serves any browser: affinity would only unbalance the load.
		if a := s.Spec.SessionAffinity; a != "" && a != corev1.ServiceAffinityNone {
			t.Errorf("%s Service: session affinity %q, want none", role, s.Spec.SessionAffinity)
		}
	}

	// The memory limit reaches the runtime.
	if !slices.ContainsFunc(gw.Env, func(e corev1.EnvVar) bool {
		return e.Name == "GOMEMLIMIT" && e.ValueFrom != nil && e.ValueFrom.ResourceFieldRef != nil &&
			e.ValueFrom.ResourceFieldRef.Resource == "limits.memory"
	}) {
		t.Errorf("GOMEMLIMIT does not come from limits.memory: %+v", gw.Env)
	}
	for _, arg := range []string{"--memory-headroom=10", "--policy-cache-bytes=0", "--shutdown-delay=10s", "--webhook-ca-bundle=/etc/portcullis/tls/ca.crt"} {
		if !slices.Contains(gw.Args, arg) {
			t.Errorf("gateway args lack %s: %v", arg, gw.Args)
		}
	}
	if slices.ContainsFunc(gw.Args, func(a string) bool {
		return strings.HasPrefix(a, "--client-ca") || strings.HasPrefix(a, "--public-webhook-url") || strings.HasPrefix(a, "--metrics-") ||
			strings.HasPrefix(a, "--tenants") || strings.HasPrefix(a, "--exclude-tenants")
	}) {
		t.Errorf("unset values reach the args: %v", gw.Args)
	}

	// One database URL, from the Secret, for the gateway and the
	// migration; plain-HTTP probes.
	job := one(t, objs, "Job").typed.(*batchv1.Job)
	for _, c := range []*corev1.Container{gw, &job.Spec.Template.Spec.Containers[0]} {
		if env := envNames(c); !slices.Contains(env, "PORTCULLIS_DATABASE_URL_FILE") || slices.Contains(env, "PORTCULLIS_DATABASE_DIRECT_URL_FILE") {
			t.Errorf("%s: database environment %v", c.Name, env)
		}
	}
	if gw.LivenessProbe.HTTPGet.Scheme != "" || gw.ReadinessProbe.HTTPGet.Scheme != "" {
		t.Errorf("probe schemes %q, %q without metrics.tls", gw.LivenessProbe.HTTPGet.Scheme, gw.ReadinessProbe.HTTPGet.Scheme)
	}

	// No token, a service account of its own, a priority, spread.
	if pod.Spec.AutomountServiceAccountToken == nil || *pod.Spec.AutomountServiceAccountToken {
		t.Error("the service account token is mounted")
	}
	sa := one(t, objs, "ServiceAccount").typed.(*corev1.ServiceAccount)
	if pod.Spec.ServiceAccountName != sa.Name || sa.AutomountServiceAccountToken == nil || *sa.AutomountServiceAccountToken {
		t.Errorf("service account %q (pod uses %q)", sa.Name, pod.Spec.ServiceAccountName)
	}
	if pod.Spec.PriorityClassName != "system-cluster-critical" {
		t.Errorf("priorityClassName %q", pod.Spec.PriorityClassName)
	}
	if pod.Spec.Affinity == nil || pod.Spec.Affinity.PodAntiAffinity == nil || len(pod.Spec.TopologySpreadConstraints) == 0 {
		t.Error("no default anti-affinity or topology spread")
	}
	if pod.Spec.SecurityContext.FSGroup == nil {
		t.Error("no fsGroup: the spill volume may not be writable")
	}
	grace := *pod.Spec.TerminationGracePeriodSeconds
	if grace < 10+30+5 {
		t.Errorf("terminationGracePeriodSeconds %d is shorter than the drain and the shutdown", grace)
	}
	if dep.Spec.Strategy.RollingUpdate == nil || dep.Spec.Strategy.RollingUpdate.MaxUnavailable.IntValue() != 0 {
		t.Error("a rollout may take a replica away before its replacement is ready")
	}

	// Release-scoped names and the chart label.
	for _, o := range objs {
		if o.typed == nil {
			continue
		}
		labels := o.u["metadata"].(map[string]any)["labels"].(map[string]any)
		if !strings.HasPrefix(labels["helm.sh/chart"].(string), "portcullis-") || !strings.HasPrefix(o.name, "rel-portcullis") {
			t.Errorf("%s %q: labels %v", o.gvk.Kind, o.name, labels)
		}
	}
	vols := map[string]string{}
	for _, v := range pod.Spec.Volumes {
		if v.Secret != nil {
			vols[v.Name] = v.Secret.SecretName
		}
	}
	if vols["tls"] != "rel-portcullis-tls" || vols["database"] != "rel-portcullis-database" {
		t.Errorf("secret names %v", vols)
	}

	// The migration hook runs like the gateway, with a deadline.
	if job.Spec.ActiveDeadlineSeconds == nil || job.Spec.Template.Spec.Containers[0].Resources.Limits.Memory().IsZero() ||
		job.Annotations["helm.sh/hook"] != "pre-install,pre-upgrade" {
		t.Errorf("migration job: %+v", job.Spec)
	}
	// Two replicas: the budget keeps one.
	pdb := one(t, objs, "PodDisruptionBudget").typed.(*policyv1.PodDisruptionBudget)
	if pdb.Spec.MinAvailable == nil || pdb.Spec.MinAvailable.IntValue() != 1 {
		t.Errorf("pdb %+v", pdb.Spec)
	}
	for _, kind := range []string{"ServiceMonitor", "PrometheusRule", "NetworkPolicy", "Certificate", "ConfigMap", "PersistentVolumeClaim", "HorizontalPodAutoscaler"} {
		if n := len(find(objs, kind)); n != 0 {
			t.Errorf("%d %s rendered by default", n, kind)
		}
	}
}

func TestRealisticOverrides(t *testing.T) {
	objs := render(t, realistic...)
	dep := one(t, objs, "Deployment").typed.(*appsv1.Deployment)
	gw := container(t, &dep.Spec.Template, "gateway")
	for _, arg := range []string{"--public-webhook-url=https://portcullis.example.com",
		"--client-ca-cert=/etc/portcullis/client-ca/tls.crt", "--client-ca-key=/etc/portcullis/client-ca/tls.key"} {
		if !slices.Contains(gw.Args, arg) {
			t.Errorf("gateway args lack %s: %v", arg, gw.Args)
		}
	}
	if gw.Image != "ghcr.io/portcullis-dev/portcullis@sha256:"+strings.Repeat("ab", 32) {
		t.Errorf("image %q does not use the digest", gw.Image)
	}
	if !slices.ContainsFunc(gw.Env, func(e corev1.EnvVar) bool {
		return e.Name == "OTEL_EXPORTER_OTLP_ENDPOINT" && e.Value == "http://otel-collector:4318"
	}) {
		t.Errorf("env %+v", gw.Env)
	}
	for _, o := range find(objs, "Service") {
		s := o.typed.(*corev1.Service)
		role := s.Labels["app.kubernetes.io/component"]
		exposed := s.Spec.Type == corev1.ServiceTypeLoadBalancer
		if exposed != (role == "webhook") {
			t.Errorf("%s Service has type %s", role, s.Spec.Type)
		}
		if role == "webhook" && (len(s.Spec.LoadBalancerSourceRanges) != 1 || s.Annotations["service.beta.kubernetes.io/aws-load-balancer-type"] != "nlb") {
			t.Errorf("webhook Service %+v", s)
		}
	}
	cert := one(t, objs, "Certificate")
	names := cert.u["spec"].(map[string]any)["dnsNames"].([]any)
	if !slices.Contains(names, any("portcullis.example.com")) || cert.u["spec"].(map[string]any)["secretName"] != "rel-portcullis-tls" {
		t.Errorf("certificate %v", cert.u["spec"])
	}
	// The pool goes through PgBouncer: the gateway and the migration
	// also get the direct URL, from the same Secret.
	job := one(t, objs, "Job").typed.(*batchv1.Job)
	for _, c := range []*corev1.Container{gw, &job.Spec.Template.Spec.Containers[0]} {
		if !slices.ContainsFunc(c.Env, func(e corev1.EnvVar) bool {
			return e.Name == "PORTCULLIS_DATABASE_DIRECT_URL_FILE" && e.Value == "/etc/portcullis/database/direct-url"
		}) || !slices.Contains(envNames(c), "PORTCULLIS_DATABASE_URL_FILE") {
			t.Errorf("%s: database environment %+v", c.Name, c.Env)
		}
	}

	// Metrics over TLS with a token: the flags, the mounted Secret, HTTPS
	// probes, and a ServiceMonitor that verifies and authenticates.
	for _, arg := range []string{"--metrics-tls", "--metrics-token-file=/etc/portcullis/metrics-token/token"} {
		if !slices.Contains(gw.Args, arg) {
			t.Errorf("gateway args lack %s: %v", arg, gw.Args)
		}
	}
	if !slices.ContainsFunc(dep.Spec.Template.Spec.Volumes, func(v corev1.Volume) bool {
		return v.Secret != nil && v.Secret.SecretName == "portcullis-metrics-token"
	}) || !slices.ContainsFunc(gw.VolumeMounts, func(m corev1.VolumeMount) bool { return m.MountPath == "/etc/portcullis/metrics-token" }) {
		t.Errorf("metrics token not mounted: %+v", gw.VolumeMounts)
	}
	if gw.LivenessProbe.HTTPGet.Scheme != corev1.URISchemeHTTPS || gw.ReadinessProbe.HTTPGet.Scheme != corev1.URISchemeHTTPS {
		t.Errorf("probe schemes %q, %q with metrics.tls", gw.LivenessProbe.HTTPGet.Scheme, gw.ReadinessProbe.HTTPGet.Scheme)
	}
	ep := one(t, objs, "ServiceMonitor").u["spec"].(map[string]any)["endpoints"].([]any)[0].(map[string]any)
	tlsCfg, _ := ep["tlsConfig"].(map[string]any)
	bearer, _ := ep["bearerTokenSecret"].(map[string]any)
	if ep["scheme"] != "https" || tlsCfg == nil || tlsCfg["serverName"] != "rel-portcullis-webhook.portcullis-system.svc" ||
		tlsCfg["ca"].(map[string]any)["secret"].(map[string]any)["key"] != "ca.crt" ||
		bearer["name"] != "portcullis-metrics-token" || bearer["key"] != "token" {
		t.Errorf("ServiceMonitor endpoint %v", ep)
	}
	one(t, objs, "PrometheusRule")
	one(t, objs, "NetworkPolicy")
	one(t, objs, "PersistentVolumeClaim")

	// The dashboards are the ones in deploy/grafana, byte for byte.
	dashboards := find(objs, "ConfigMap")
	files, _ := filepath.Glob(filepath.Join(repoRoot, "deploy", "grafana", "*.json"))
	if len(dashboards) != len(files) || len(files) == 0 {
		t.Fatalf("%d dashboard ConfigMaps for %d dashboards", len(dashboards), len(files))
	}
	for _, f := range files {
		want, _ := os.ReadFile(f)
		found := false
		for _, o := range dashboards {
			cm := o.typed.(*corev1.ConfigMap)
			if got, ok := cm.Data[filepath.Base(f)]; ok {
				found = true
				if strings.TrimSpace(got) != strings.TrimSpace(string(want)) {
					t.Errorf("%s differs from the chart's copy: copy deploy/grafana/*.json into deploy/helm/portcullis/dashboards/", f)
				}
				if cm.Labels["grafana_dashboard"] != "1" {
					t.Errorf("%s: labels %v", cm.Name, cm.Labels)
				}
			}
		}
		if !found {
			t.Errorf("no ConfigMap holds %s", filepath.Base(f))
		}
	}
}

// A tenant on replicas of its own: a second release answers for it alone
// and runs no migration; the main release leaves it out.
func TestTenantOnReleaseOfItsOwn(t *testing.T) {
	objs := render(t, "gateway.tenants={noisy,big-one}", "migrate.enabled=false", "webhook.publicURL=https://noisy.portcullis.example.com")
	gw := container(t, &one(t, objs, "Deployment").typed.(*appsv1.Deployment).Spec.Template, "gateway")
	for _, arg := range []string{"--tenants=noisy,big-one", "--public-webhook-url=https://noisy.portcullis.example.com"} {
		if !slices.Contains(gw.Args, arg) {
			t.Errorf("gateway args lack %s: %v", arg, gw.Args)
		}
	}
	if jobs := find(objs, "Job"); len(jobs) != 0 {
		t.Errorf("the tenant's release runs a migration: %d Jobs", len(jobs))
	}
	objs = render(t, "gateway.excludeTenants={noisy}")
	gw = container(t, &one(t, objs, "Deployment").typed.(*appsv1.Deployment).Spec.Template, "gateway")
	if !slices.Contains(gw.Args, "--exclude-tenants=noisy") || slices.ContainsFunc(gw.Args, func(a string) bool { return strings.HasPrefix(a, "--tenants") }) {
		t.Errorf("main release args: %v", gw.Args)
	}
}

// One replica: the budget must not block a node drain.
func TestSingleReplicaBudget(t *testing.T) {
	pdb := one(t, render(t, "replicaCount=1"), "PodDisruptionBudget").typed.(*policyv1.PodDisruptionBudget)
	if pdb.Spec.MinAvailable != nil || pdb.Spec.MaxUnavailable == nil || pdb.Spec.MaxUnavailable.IntValue() != 1 {
		t.Errorf("pdb with one replica: %+v", pdb.Spec)
	}
}

func TestNameOverrides(t *testing.T) {
	objs := render(t, "fullnameOverride=gate")
	if d := one(t, objs, "Deployment"); d.name != "gate" {
		t.Errorf("deployment %q", d.name)
	}
	for _, o := range find(objs, "Service") {
		if !strings.HasPrefix(o.name, "gate-") {
			t.Errorf("service %q", o.name)
		}
	}
}

func envNames(c *corev1.Container) []string {
	var names []string
	for _, e := range c.Env {
		names = append(names, e.Name)
	}
	return names
}
