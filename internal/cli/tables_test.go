package cli

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/portcullis-dev/portcullis/internal/apiv1"
)

var now = time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)

func TestTables(t *testing.T) {
	exp := now.Add(48 * time.Hour)
	used := now.Add(-90 * time.Second)
	revoked := now.Add(-time.Hour)
	var b bytes.Buffer
	printTenants(&b, now, []apiv1.Tenant{
		{Name: "acme", DisplayName: "Acme Corp", CreatedAt: now.Add(-3 * 24 * time.Hour)},
		{Name: "demo-tenant-long-name", CreatedAt: now.Add(-5 * time.Minute)},
	})
	b.WriteString("--\n")
	printCredentials(&b, now, []apiv1.Credential{
		{ID: 1, Type: "token", Description: "issued by admin cluster create", Active: true, CreatedAt: now.Add(-2 * time.Hour), LastUsedAt: &used},
		{ID: 12, Type: "basic", Username: "kind-demo-2", Active: false, CreatedAt: now.Add(-time.Hour), RevokedAt: &revoked, ExpiresAt: &exp},
	})
	b.WriteString("--\n")
	printHistory(&b, now, []apiv1.Version{
		{Version: 3, Operation: "update", Author: "ops", APIVersion: "admissionregistration.k8s.io/v1", RollbackOf: 1, Time: now.Add(-10 * time.Second)},
		{Version: 1, Operation: "create", Author: "bootstrap", APIVersion: "admissionregistration.k8s.io/v1", Time: now.Add(-26 * time.Hour)},
	})
	b.WriteString("--\n")
	printApply(&b, apiv1.ApplyResult{DryRun: true, Results: []apiv1.ApplyItem{
		{APIVersion: "admissionregistration.k8s.io/v1", Kind: "ValidatingAdmissionPolicy", Name: "p", Action: "created"},
		{APIVersion: "v1", Kind: "ConfigMap", Name: "limits", Action: "unchanged"},
	}})
	want := `NAME                    DISPLAY NAME   AGE
acme                    Acme Corp      3d
demo-tenant-long-name   <none>         5m
--
ID   TYPE    IDENTITY      DESCRIPTION                      STATUS    EXPIRES   LAST USED   AGE
1    token   <none>        issued by admin cluster create   active    <none>    90s ago     120m
12   basic   kind-demo-2   <none>                           revoked   in 2d     <never>     60m
--
VERSION   OPERATION   AUTHOR      API VERSION                       NOTE                    AGE
3         update      ops         admissionregistration.k8s.io/v1   rollback to version 1   10s
1         create      bootstrap   admissionregistration.k8s.io/v1   <none>                  26h
--
validatingadmissionpolicy.admissionregistration.k8s.io/p created (dry run)
configmap/limits unchanged (dry run)
`
	if b.String() != want {
		t.Fatalf("tables:\n%s\nwant:\n%s", b.String(), want)
	}
}

func TestObjectAndDecisionTables(t *testing.T) {
	var objs []storedObject
	for _, js := range []string{
		`{"apiVersion":"admissionregistration.k8s.io/v1","kind":"ValidatingAdmissionPolicy","metadata":{"name":"limits","resourceVersion":"4","creationTimestamp":"2026-11-23T11:00:00Z"},
		  "spec":{"failurePolicy":"Ignore","paramKind":{"apiVersion":"v1","kind":"ConfigMap"},"validations":[{"expression":"true"},{"expression":"true"}]}}`,
		`{"apiVersion":"admissionregistration.k8s.io/v1","kind":"ValidatingAdmissionPolicyBinding","metadata":{"name":"limits-prod","resourceVersion":"5","creationTimestamp":"2026-11-23T11:59:30Z"},
		  "spec":{"policyName":"limits","paramRef":{"name":"prod-limits","namespace":"policy"},"validationActions":["Deny","Audit"]}}`,
		`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"prod-limits","namespace":"policy","resourceVersion":"6"}}`,
	} {
		var o storedObject
		if err := json.Unmarshal([]byte(js), &o); err != nil {
			t.Fatal(err)
		}
		objs = append(objs, o)
	}
	var b bytes.Buffer
	printObjects(&b, now, "", objs)
	b.WriteString("--\n")
	printObjects(&b, now, apiv1.TypeParams, nil)
	b.WriteString("--\n")
	printDecisions(&b, now, []apiv1.Decision{{Time: now.Add(-2 * time.Minute), Cluster: "prod-eu", Operation: "CREATE", Kind: "Pod",
		Namespace: "shop", Name: "api-x", UserName: "system:serviceaccount:kube-system:replicaset-controller", Verdict: "denied",
		Message: `pods "api-x" is forbidden: ValidatingAdmissionPolicy 'baseline-no-privileged' with binding 'baseline-no-privileged' denied request: ` +
			strings.Repeat("privileged containers are not allowed ", 3),
		Bindings: []apiv1.DecisionBinding{{Policy: "baseline-no-privileged", Denied: true}, {Policy: "baseline-required-labels"}}},
		{Time: now.Add(-3 * time.Minute), Cluster: "prod-eu", Operation: "CREATE", Kind: "Pod", Namespace: "shop", Name: "api-y",
			UserName: "alice", Verdict: "denied", Message: "three policies",
			Bindings: []apiv1.DecisionBinding{{Policy: "a", Denied: true}, {Policy: "b", Denied: true}, {Policy: "c", Denied: true}}},
		{Time: now.Add(-4 * time.Minute), Cluster: "prod-eu", Operation: "CREATE", Kind: "Pod", Namespace: "shop", Name: "api-z",
			UserName: "bob", Verdict: "allowed", MutatedBy: []string{"team-label", "default-image-pull-policy", "spot-toleration"}}})
	b.WriteString("--\n")
	before, after := int64(3), int64(4)
	printAudit(&b, now, []apiv1.AuditEntry{{Time: now.Add(-time.Minute), Actor: "token:7/admin", ActorName: "ops", Tenant: "acme", Action: "apply", Kind: "ValidatingAdmissionPolicy",
		Name: "limits", VersionBefore: &before, VersionAfter: &after, DryRun: true}})
	want := `NAME     KIND                        VALIDATIONS   FAILURE POLICY   PARAM KIND   VERSION   AGE
limits   ValidatingAdmissionPolicy   2             Ignore           ConfigMap    4         60m

NAME          KIND                               POLICY   PARAM                ACTIONS      VERSION   AGE
limits-prod   ValidatingAdmissionPolicyBinding   limits   policy/prod-limits   Deny,Audit   5         30s

NAMESPACE   NAME          KIND        API VERSION   VERSION   AGE
policy      prod-limits   ConfigMap   v1            6         <unknown>
--
No params found.
--
VERDICT   CLUSTER   OPERATION   KIND   NAMESPACE   NAME    USER                                                      DENIED BY                MUTATED BY                                     MESSAGE                                                        AGE
denied    prod-eu   CREATE      Pod    shop        api-x   system:serviceaccount:kube-system:replicaset-controller   baseline-no-privileged   <none>                                         privileged containers are not allowed privileged containe...   2m
denied    prod-eu   CREATE      Pod    shop        api-y   alice                                                     a,b,+1 more              <none>                                         three policies                                                 3m
allowed   prod-eu   CREATE      Pod    shop        api-z   bob                                                       <none>                   team-label,default-image-pull-policy,+1 more   <none>                                                         4m
--
ACTOR           ACTOR NAME   TENANT   ACTION            KIND                        NAMESPACE   NAME     VERSION   AGE
token:7/admin   ops          acme     apply (dry run)   ValidatingAdmissionPolicy   <none>      limits   3 -> 4    60s
`
	if b.String() != want {
		t.Fatalf("tables:\n%s\nwant:\n%s", b.String(), want)
	}
}

// Mutating policies and bindings get tables of their own, after the
// validating ones.
func TestMutatingObjectTables(t *testing.T) {
	var objs []storedObject
	for _, js := range []string{
		`{"apiVersion":"admissionregistration.k8s.io/v1","kind":"MutatingAdmissionPolicy","metadata":{"name":"team-label","resourceVersion":"7","creationTimestamp":"2026-11-23T11:00:00Z"},
		  "spec":{"reinvocationPolicy":"IfNeeded","mutations":[{"patchType":"JSONPatch"},{"patchType":"ApplyConfiguration"}]}}`,
		`{"apiVersion":"admissionregistration.k8s.io/v1","kind":"ValidatingAdmissionPolicy","metadata":{"name":"limits","resourceVersion":"4","creationTimestamp":"2026-11-23T11:00:00Z"},
		  "spec":{"validations":[{"expression":"true"}]}}`,
		`{"apiVersion":"admissionregistration.k8s.io/v1beta1","kind":"MutatingAdmissionPolicyBinding","metadata":{"name":"team-label","resourceVersion":"8","creationTimestamp":"2026-11-23T11:59:30Z"},
		  "spec":{"policyName":"team-label","paramRef":{"name":"teams"}}}`,
	} {
		var o storedObject
		if err := json.Unmarshal([]byte(js), &o); err != nil {
			t.Fatal(err)
		}
		objs = append(objs, o)
	}
	var b bytes.Buffer
	if err := printObjects(&b, now, "", objs); err != nil {
		t.Fatal(err)
	}
	b.WriteString("--\n")
	if err := printObjects(&b, now, apiv1.TypePolicies, objs[:1]); err != nil {
		t.Fatal(err)
	}
	want := `NAME     KIND                        VALIDATIONS   FAILURE POLICY   PARAM KIND   VERSION   AGE
limits   ValidatingAdmissionPolicy   1             Fail             <none>       4         60m

NAME         KIND                      MUTATIONS   FAILURE POLICY   REINVOCATION   PARAM KIND   VERSION   AGE
team-label   MutatingAdmissionPolicy   2           Fail             IfNeeded       <none>       7         60m

NAME         KIND                             POLICY       PARAM   VERSION   AGE
team-label   MutatingAdmissionPolicyBinding   team-label   teams   8         30s
--
NAME         KIND                      MUTATIONS   FAILURE POLICY   REINVOCATION   PARAM KIND   VERSION   AGE
team-label   MutatingAdmissionPolicy   2           Fail             IfNeeded       <none>       7         60m
`
	if b.String() != want {
		t.Fatalf("tables:\n%s\nwant:\n%s", b.String(), want)
	}
}

// A sync token belongs to one cluster; the table says which.
func TestTokenTable(t *testing.T) {
	exp := now.Add(48 * time.Hour)
	var b bytes.Buffer
	if err := printTokens(&b, now, []apiv1.Token{
		{ID: 1, Name: "root", Role: "operator", CreatedAt: now.Add(-3 * time.Hour)},
		{ID: 2, Name: "prod-sync", Role: "sync", Tenant: "acme", Cluster: "prod-eu", CreatedBy: "root", CreatedAt: now.Add(-time.Hour), ExpiresAt: &exp},
		{ID: 3, Name: "staging-sync", Role: "sync", Tenant: "acme", Cluster: "staging", CreatedBy: "root", CreatedAt: now.Add(-time.Hour)},
	}); err != nil {
		t.Fatal(err)
	}
	want := `ID   NAME           ROLE       TENANT   CLUSTER   STATUS   CREATED BY   EXPIRES   LAST USED   AGE
1    root           operator   <none>   <none>    active   <none>       <none>    <never>     3h
2    prod-sync      sync       acme     prod-eu   active   root         in 2d     <never>     60m
3    staging-sync   sync       acme     staging   active   root         <none>    <never>     60m
`
	if b.String() != want {
		t.Fatalf("tokens:\n%s\nwant:\n%s", b.String(), want)
	}
}

// The limits table shows the inventory bounds beside the evaluation
// limits: effective, the tenant's override, the gateway's default.
func TestLimitsTable(t *testing.T) {
	var b bytes.Buffer
	if err := printLimits(&b, apiv1.TenantLimits{Tenant: "acme",
		Defaults:  apiv1.Limits{ConcurrentEvaluations: 2, CELCostPerRequest: 100, MaxNamespacesPerCluster: 10_000, MaxCRDsPerCluster: 1_000},
		Overrides: apiv1.Limits{RequestsPerSecond: 50, MaxNamespacesPerCluster: 200},
		Effective: apiv1.Limits{ConcurrentEvaluations: 2, CELCostPerRequest: 100, RequestsPerSecond: 50, MaxNamespacesPerCluster: 200, MaxCRDsPerCluster: 1_000},
	}); err != nil {
		t.Fatal(err)
	}
	want := `LIMIT                        EFFECTIVE   OVERRIDE   DEFAULT
concurrent-evaluations       2           -          2
cel-cost-per-request         100         -          100
requests-per-second          50          50         none
max-namespaces-per-cluster   200         200        10000
max-crds-per-cluster         1000        -          1000
Evaluation limits apply on each replica, inventory bounds to each cluster, of tenant "acme".
`
	if b.String() != want {
		t.Fatalf("limits:\n%s\nwant:\n%s", b.String(), want)
	}
}
