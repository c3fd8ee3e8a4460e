package api

import (
	"strings"
	"testing"

	"github.com/portcullis-dev/portcullis/internal/apiv1"
)

const statusPolicy = `apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata: {name: guard-status}
spec:
  matchConstraints:
    resourceRules:
    - {apiGroups: ["apps"], apiVersions: ["v1"], operations: ["UPDATE"], resources: ["deployments/status"]}
  validations:
  - expression: "true"
`

const eventsPolicy = `apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata: {name: audit-events}
spec:
  matchConstraints:
    resourceRules:
    - {apiGroups: ["", "events.k8s.io"], apiVersions: ["*"], operations: ["CREATE"], resources: ["events"]}
  validations:
  - expression: "true"
`

// Section 8 of issue 21: the generated webhooks leave out status writes
// unless a policy needs them, and a policy matching what they always leave
// out is warned about at apply and with the artifacts.
func TestWebhookExclusionsFollowPolicies(t *testing.T) {
	e := newEnv(t)
	a := "/api/v1/tenants/a/clusters"
	e.doJSON(e.adminA, "POST", a, apiv1.ClusterCreate{Name: "prod"}, 201, nil)
	var arts apiv1.Artifacts
	e.doJSON(e.viewerA, "GET", a+"/prod/artifacts", nil, 200, &arts)
	if !strings.Contains(arts.Webhooks, "exclude-status") || !strings.Contains(arts.Webhooks, "exclude-events") || len(arts.Warnings) != 0 {
		t.Fatalf("without policies: warnings %v\n%s", arts.Warnings, arts.Webhooks)
	}

	res := e.apply(e.adminA, "/api/v1/tenants/a/apply", statusPolicy)
	if len(res.Results) != 1 || len(res.Results[0].Warnings) != 1 ||
		!strings.Contains(res.Results[0].Warnings[0], "admin cluster artifacts") {
		t.Fatalf("status policy: %+v", res.Results)
	}
	e.doJSON(e.viewerA, "GET", a+"/prod/artifacts", nil, 200, &arts)
	if strings.Contains(arts.Webhooks, "exclude-status") || !strings.Contains(arts.Webhooks, "exclude-events") || len(arts.Warnings) != 0 {
		t.Fatalf("with a status policy: warnings %v\n%s", arts.Warnings, arts.Webhooks)
	}

	res = e.apply(e.adminA, "/api/v1/tenants/a/apply", eventsPolicy)
	if len(res.Results) != 1 || len(res.Results[0].Warnings) != 1 ||
		!strings.Contains(res.Results[0].Warnings[0], `policy "audit-events" matches events`) {
		t.Fatalf("events policy: %+v", res.Results)
	}
	e.doJSON(e.viewerA, "GET", a+"/prod/artifacts", nil, 200, &arts)
	if !strings.Contains(arts.Webhooks, "exclude-events") || len(arts.Warnings) != 1 ||
		!strings.Contains(arts.Warnings[0], "audit-events") {
		t.Fatalf("with an events policy: warnings %v", arts.Warnings)
	}
}
