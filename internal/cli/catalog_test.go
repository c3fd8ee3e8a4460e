package cli

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/portcullis-dev/portcullis/internal/apiv1"
)

func TestCatalogCommandLineErrors(t *testing.T) {
	env := map[string]string{"PORTCULLIS_SERVER": "https://127.0.0.1:1", "PORTCULLIS_TOKEN": "t", "HOME": t.TempDir()}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"catalog"}, "catalog needs a subcommand: install, list, show, upgrade"},
		{[]string{"catalog", "show"}, "missing NAME"},
		{[]string{"catalog", "install", "pod-security-baseline"}, "--tenant is required"},
		{[]string{"catalog", "install", "pod-security-baseline", "--tenant", "t", "--action", "Block"}, `--action "Block": use Deny, Warn or Audit`},
		{[]string{"catalog", "upgrade", "--tenant", "t"}, "missing NAME"},
		{[]string{"catalog", "upgrade", "a", "b", "--tenant", "t"}, `unexpected argument "b"`},
	} {
		code, _, stderr := runCLI(t, env, "", tc.args...)
		if code != exitUsage || !strings.Contains(stderr, tc.want) {
			t.Errorf("admin %s: exit %d, %q; want exit 2 and %q", strings.Join(tc.args, " "), code, stderr, tc.want)
		}
	}
}

// fakeUpgrades answers upgrade calls with a diff and records whether the
// real (not dry-run) upgrade was sent.
type fakeUpgrades struct {
	mu      sync.Mutex
	applied int
}

func (f *fakeUpgrades) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/api/v1/tenants/t/catalog/trusted-registries/upgrade" || r.Method != http.MethodPost {
		http.NotFound(w, r)
		return
	}
	_, _ = io.Copy(io.Discard, r.Body)
	res := apiv1.CatalogResult{Entry: "trusted-registries", FromVersion: "0.9.0", ToVersion: "1.0.0",
		Diff: "--- a\n+++ b\n@@ -1 +1 @@\n-old\n+new\n"}
	if r.URL.Query().Get("dryRun") == "true" {
		res.DryRun = true
	} else {
		f.mu.Lock()
		f.applied++
		f.mu.Unlock()
		res.Results = []apiv1.ApplyItem{{APIVersion: "v1", Kind: "ConfigMap", Name: "trusted-registries", Action: apiv1.ActionConfigured}}
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(res)
}

// TestCatalogUpgradeAsks shows the diff first and replaces the installed
// objects only on a yes.
func TestCatalogUpgradeAsks(t *testing.T) {
	fake := &fakeUpgrades{}
	srv := httptest.NewServer(fake)
	defer srv.Close()
	env := map[string]string{"PORTCULLIS_SERVER": srv.URL, "PORTCULLIS_TOKEN": "t", "HOME": t.TempDir()}
	args := []string{"catalog", "upgrade", "trusted-registries", "--tenant", "t"}

	code, out, stderr := runCLI(t, env, "n\n", args...)
	if code != exitFailure || !strings.Contains(out, "-old\n+new\nUpgrading trusted-registries from version 0.9.0 to 1.0.0.") ||
		!strings.Contains(stderr, "[y/N]") || !strings.Contains(stderr, "upgrade cancelled; nothing changed") || fake.applied != 0 {
		t.Fatalf("answer no: exit %d, out %q, stderr %q, applied %d", code, out, stderr, fake.applied)
	}
	code, out, _ = runCLI(t, env, "", append(args, "--dry-run")...)
	if code != 0 || !strings.Contains(out, "+new") || fake.applied != 0 {
		t.Fatalf("--dry-run: exit %d, out %q, applied %d", code, out, fake.applied)
	}
	code, out, stderr = runCLI(t, env, "yes\n", args...)
	if code != 0 || fake.applied != 1 || !strings.Contains(out, "configmap/trusted-registries configured") ||
		!strings.Contains(out, "catalog entry trusted-registries upgraded from 0.9.0 to 1.0.0 in tenant t") {
		t.Fatalf("answer yes: exit %d, out %q, stderr %q, applied %d", code, out, stderr, fake.applied)
	}
	code, _, stderr = runCLI(t, env, "", append(args, "--yes")...)
	if code != 0 || fake.applied != 2 || strings.Contains(stderr, "[y/N]") {
		t.Fatalf("--yes: exit %d, stderr %q, applied %d", code, stderr, fake.applied)
	}
}
