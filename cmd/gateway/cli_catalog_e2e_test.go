package main

import (
	"regexp"
	"strings"
	"testing"

	"github.com/portcullis-dev/portcullis/internal/pgtest"
)

// TestCLICatalog lists, shows, installs and upgrades a catalog entry
// through the admin CLI against a real gateway, and tests a review
// against the installed policy.
func TestCLICatalog(t *testing.T) {
	a := operatorCLI(t, newE2E(t, pgtest.URL(t)))
	a.ok("tenant", "create", "acme")
	a.ok("cluster", "create", "prod", "--tenant", "acme", "--out", "prod")

	if out := a.ok("catalog", "list"); !strings.Contains(out, "pod-security-restricted") || !strings.Contains(out, "registries") {
		t.Fatalf("catalog list:\n%s", out)
	}
	if out := a.ok("catalog", "show", "pod-security-baseline"); !strings.HasPrefix(out, "# The Pod Security Standards, level baseline") {
		t.Fatalf("catalog show:\n%s", out)
	}
	a.fails(1, `the catalog has no entry "nope"`, "catalog", "show", "nope")

	out := a.ok("catalog", "install", "pod-security-baseline", "--tenant", "acme", "--dry-run")
	if !strings.Contains(out, "validatingadmissionpolicy.admissionregistration.k8s.io/pod-security-baseline created (dry run)") ||
		!strings.Contains(out, "would be installed (dry run)") {
		t.Fatalf("install --dry-run:\n%s", out)
	}
	a.fails(1, "--cluster-selector: not a label selector", "catalog", "install", "pod-security-baseline", "--tenant", "acme", "--cluster-selector", "env in prod")
	out = a.ok("catalog", "install", "pod-security-baseline", "--tenant", "acme")
	if !strings.Contains(out, "catalog entry pod-security-baseline 1.0.0 installed in tenant acme") {
		t.Fatalf("install:\n%s", out)
	}
	if out := a.ok("catalog", "list", "--tenant", "acme"); !strings.Contains(out, "INSTALLED") || !regexpLine(out, `^pod-security-baseline\s+1\.0\.0\s+pod-security\s+<none>\s+1\.0\.0\s`) {
		t.Fatalf("catalog list --tenant:\n%s", out)
	}
	a.fails(1, "already installed", "catalog", "install", "pod-security-baseline", "--tenant", "acme")

	privileged := strings.Replace(noTeamPod, `"image":"nginx:1.27"`, `"image":"nginx:1.27","securityContext":{"privileged":true}`, 1)
	writeFile(t, "privileged.json", podReview("admission.k8s.io/v1", "priv", "default", privileged, false))
	if out := a.ok("test", "--tenant", "acme", "--cluster", "prod", "-f", "privileged.json"); !strings.Contains(out, "validating webhook (no MutatingAdmissionPolicy matches): denied") ||
		!strings.Contains(out, `privileged: containers "c" must not set securityContext.privileged=true`) {
		t.Fatalf("test of a privileged pod:\n%s", out)
	}

	if out := a.ok("catalog", "upgrade", "pod-security-baseline", "--tenant", "acme", "--dry-run"); !strings.Contains(out, "is up to date") {
		t.Fatalf("upgrade of an unchanged install:\n%s", out)
	}
	// The tenant edits the policy; an upgrade shows the change back and
	// restores the catalog's version.
	policy := a.ok("get", "vap", "pod-security-baseline", "--tenant", "acme", "-o", "yaml")
	writeFile(t, "edited.yaml", strings.Replace(policy, "'privileged: containers '", "'no privileged containers: '", 1))
	a.ok("apply", "--tenant", "acme", "-f", "edited.yaml")
	out = a.ok("catalog", "upgrade", "pod-security-baseline", "--tenant", "acme", "--yes")
	for _, want := range []string{"-    messageExpression: '''no privileged containers: ''", "+    messageExpression: '''privileged: containers ''",
		"validatingadmissionpolicy.admissionregistration.k8s.io/pod-security-baseline configured",
		"catalog entry pod-security-baseline upgraded from 1.0.0 to 1.0.0 in tenant acme"} {
		if !strings.Contains(out, want) {
			t.Errorf("upgrade --yes lacks %q:\n%s", want, out)
		}
	}
}

// regexpLine reports whether a line of out matches pattern.
func regexpLine(out, pattern string) bool {
	re := regexp.MustCompile(pattern)
	for _, l := range strings.Split(out, "\n") {
		if re.MatchString(l) {
			return true
		}
	}
	return false
}
