package api

import (
	"strings"
	"testing"

	"github.com/portcullis-dev/portcullis/internal/apiv1"
)

// A deployment that does not answer for a tenant's webhook (--tenants,
// --exclude-tenants) does not hand that tenant's clusters its own webhook
// address, which it would refuse with 421: the caller must give the
// address of the deployment that does. Tenants it answers for get its
// address as before.
func TestArtifactsOfATenantServedElsewhereNeedItsAddress(t *testing.T) {
	e := newEnv(t)
	e.s.Serves = func(tenant string) bool { return tenant != "a" }
	a := "/api/v1/tenants/a/clusters"

	code, body := e.do(e.adminA, "POST", a, apiv1.ClusterCreate{Name: "prod", Credential: &apiv1.CredentialCreate{}})
	if code != 422 || !strings.Contains(string(body), "credential.webhookURL") || !strings.Contains(string(body), `does not answer for tenant \"a\"`) {
		t.Fatalf("cluster with a credential, no address: %d %s", code, body)
	}
	var created apiv1.ClusterCreated
	e.doJSON(e.adminA, "POST", a, apiv1.ClusterCreate{Name: "prod",
		Credential: &apiv1.CredentialCreate{WebhookURL: "https://a.gateway.example"}}, 201, &created)
	if created.Credential == nil || !strings.Contains(created.Credential.Artifacts.Webhooks, "https://a.gateway.example/t/a/validate") {
		t.Fatalf("issued %+v", created.Credential)
	}
	code, body = e.do(e.viewerA, "GET", a+"/prod/artifacts", nil)
	if code != 422 || !strings.Contains(string(body), "webhookURL") {
		t.Fatalf("artifacts, no address: %d %s", code, body)
	}
	code, body = e.do(e.adminA, "POST", a+"/prod/credentials", apiv1.CredentialCreate{})
	if code != 422 || !strings.Contains(string(body), "webhookURL") {
		t.Fatalf("credential, no address: %d %s", code, body)
	}
	var arts apiv1.Artifacts
	e.doJSON(e.viewerA, "GET", a+"/prod/artifacts?webhookURL=https://a.gateway.example", nil, 200, &arts)
	if !strings.Contains(arts.Webhooks, "https://a.gateway.example/t/a/validate") {
		t.Fatalf("artifacts %+v", arts)
	}

	b := "/api/v1/tenants/b/clusters"
	e.doJSON(e.adminB, "POST", b, apiv1.ClusterCreate{Name: "prod"}, 201, nil)
	e.doJSON(e.adminB, "GET", b+"/prod/artifacts", nil, 200, &arts)
	if !strings.Contains(arts.Webhooks, "https://gateway.example:8443/t/b/validate") {
		t.Fatalf("tenant b's artifacts %+v", arts)
	}
}
