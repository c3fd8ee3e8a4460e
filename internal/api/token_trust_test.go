package api

import (
	"fmt"
	"slices"
	"testing"

	"github.com/portcullis-dev/portcullis/internal/apiv1"
	"github.com/portcullis-dev/portcullis/internal/auditlog"
)

// A tenant admin mints a token named like the operator's bootstrap token
// ("root") and uses it: the audit log must not let its calls pass for the
// operator's. The actor is the token's id and role; the name is a label.
func TestAuditActorIsTheTokenNotItsName(t *testing.T) {
	e := newEnv(t)
	var fake apiv1.TokenIssued
	e.doJSON(e.adminA, "POST", "/api/v1/tokens", apiv1.TokenCreate{Name: "root", Role: "admin", Tenant: "a"}, 201, &fake)
	e.doJSON(fake.Secret, "POST", "/api/v1/tenants/a/clusters", apiv1.ClusterCreate{Name: "prod"}, 201, nil)
	e.doJSON(e.operator, "POST", "/api/v1/tenants", apiv1.TenantCreate{Name: "c"}, 201, nil)
	root, err := e.s.Tokens.Authenticate(t.Context(), e.operator)
	if err != nil {
		t.Fatal(err)
	}
	var l apiv1.List[auditlog.Entry]
	e.doJSON(e.operator, "GET", "/api/v1/audit?actorName=root", nil, 200, &l)
	var actors []string
	for _, en := range l.Items {
		actors = append(actors, en.Actor+" "+en.Kind)
	}
	want := []string{
		fmt.Sprintf("token:%d/operator Tenant", root.TokenID),
		fmt.Sprintf("token:%d/admin Cluster", fake.Token.ID),
	}
	if !slices.Equal(actors, want) {
		t.Fatalf("calls by tokens named root: %v, want %v", actors, want)
	}
	e.doJSON(e.operator, "GET", fmt.Sprintf("/api/v1/audit?actor=token:%d", root.TokenID), nil, 200, &l)
	if len(l.Items) != 1 || l.Items[0].Kind != "Tenant" {
		t.Fatalf("the operator token's calls: %+v", l.Items)
	}
}

// Tokens minted by a token survive its revocation (automation outlives a
// person's token); ?cascade=true revokes the whole tree it minted, and only
// that tree.
func TestRevokeTokenCascade(t *testing.T) {
	e := newEnv(t)
	mint := func(by, name string) apiv1.TokenIssued {
		t.Helper()
		var out apiv1.TokenIssued
		e.doJSON(by, "POST", "/api/v1/tokens", apiv1.TokenCreate{Name: name, Role: "admin", Tenant: "a"}, 201, &out)
		return out
	}
	leaked := mint(e.adminA, "leaked")
	child := mint(leaked.Secret, "child")
	grandchild := mint(child.Secret, "grandchild")
	sibling := mint(e.adminA, "sibling")
	if child.Token.CreatedByID != leaked.Token.ID || child.Token.CreatedBy != "leaked" {
		t.Fatalf("child created by %d %q", child.Token.CreatedByID, child.Token.CreatedBy)
	}
	works := func(secret string) bool {
		code, _ := e.do(secret, "GET", "/api/v1/whoami", nil)
		return code == 200
	}

	// Without cascade, the minted tokens stay valid.
	var tok apiv1.Token
	e.doJSON(e.adminA, "DELETE", fmt.Sprintf("/api/v1/tokens/%d", child.Token.ID), nil, 200, &tok)
	if tok.RevokedAt == nil || len(tok.RevokedWith) != 0 || works(child.Secret) || !works(grandchild.Secret) {
		t.Fatalf("plain revoke: %+v; grandchild works: %v", tok, works(grandchild.Secret))
	}
	// With cascade, the whole tree goes, already revoked members included.
	e.doJSON(e.adminA, "DELETE", fmt.Sprintf("/api/v1/tokens/%d?cascade=true", leaked.Token.ID), nil, 200, &tok)
	if tok.ID != leaked.Token.ID || !slices.Equal(tok.RevokedWith, []int64{child.Token.ID, grandchild.Token.ID}) {
		t.Fatalf("cascade: %+v", tok)
	}
	for _, s := range []string{leaked.Secret, child.Secret, grandchild.Secret} {
		if works(s) {
			t.Fatal("a token of the revoked tree still works")
		}
	}
	if !works(sibling.Secret) || !works(e.adminA) {
		t.Fatal("cascade revoked a token outside the tree")
	}
	var l apiv1.List[auditlog.Entry]
	e.doJSON(e.adminA, "GET", "/api/v1/tenants/a/audit?kind=Token&name=grandchild", nil, 200, &l)
	if len(l.Items) != 2 || l.Items[0].Action != "revoke" || l.Items[0].Detail["cascadeFrom"] != float64(leaked.Token.ID) {
		t.Fatalf("grandchild's audit entries: %+v", l.Items)
	}
	e.run(t, []apiCase{
		{"another tenant's tree", e.adminB, "DELETE", fmt.Sprintf("/api/v1/tokens/%d?cascade=true", sibling.Token.ID), nil, 404, "not found", ""},
		{"bad cascade", e.adminA, "DELETE", fmt.Sprintf("/api/v1/tokens/%d?cascade=maybe", sibling.Token.ID), nil, 422, "true or false", "cascade"},
	})
}
