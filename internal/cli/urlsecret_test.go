package cli

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/portcullis-dev/portcullis/internal/apiv1"
)

// `admin cluster create --auth url` warns, on stderr, that kube-apiserver
// prints the webhook URL with its secret whenever a call fails, and to
// rotate after an outage (issue 30, finding 4); another kind does not.
func TestClusterCreateWarnsOfTheURLSecretInApiserverErrors(t *testing.T) {
	for _, tc := range []struct {
		auth, typ string
		warned    bool
	}{
		{"url", apiv1.AuthURL, true},
		{"token", apiv1.AuthToken, false},
	} {
		t.Run(tc.auth, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.Method != http.MethodPost || r.URL.Path != "/api/v1/tenants/acme/clusters" {
					http.NotFound(w, r)
					return
				}
				_, _ = io.Copy(io.Discard, r.Body)
				is := &apiv1.CredentialIssued{Credential: apiv1.Credential{ID: 1, Type: tc.typ}}
				if tc.typ == apiv1.AuthURL {
					is.URLSecret = "pcuk_" + strings.Repeat("a", 52)
					is.Artifacts = apiv1.Artifacts{Webhooks: "url: https://gw/t/acme/k/" + is.URLSecret + "/validate\n", WebhooksHoldSecret: true}
				} else {
					is.Token = "pcat_x"
					is.Artifacts = apiv1.Artifacts{Kubeconfig: "token: pcat_x\n", AdmissionConfiguration: "x", Webhooks: "x"}
				}
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(http.StatusCreated)
				_ = json.NewEncoder(w).Encode(apiv1.ClusterCreated{Cluster: apiv1.Cluster{Name: "eks", Tenant: "acme"}, Credential: is})
			}))
			defer srv.Close()
			env := map[string]string{"PORTCULLIS_SERVER": srv.URL, "PORTCULLIS_TOKEN": "t", "HOME": t.TempDir()}
			code, _, stderr := runCLI(t, env, "", "cluster", "create", "eks", "--tenant", "acme", "--auth", tc.auth,
				"--out", filepath.Join(t.TempDir(), "out"))
			if code != 0 {
				t.Fatalf("exit %d: %s", code, stderr)
			}
			flat := strings.Join(strings.Fields(stderr), " ")
			for _, want := range []string{"kube-apiserver prints that URL, secret included, whenever a call to it fails",
				"in its logs and in its audit log", "Rotate the credential", "after an outage"} {
				if strings.Contains(flat, want) != tc.warned {
					t.Errorf("--auth %s: stderr says %q: %v, want %v; stderr:\n%s", tc.auth, want, !tc.warned, tc.warned, stderr)
				}
			}
		})
	}
}
