package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"testing"

	"github.com/portcullis-dev/portcullis/internal/adminauth"
	"github.com/portcullis-dev/portcullis/internal/apiv1"
	"github.com/portcullis-dev/portcullis/internal/pgtest"
)

// The admin API's evaluate answers, through the real policy cache and
// namespace inventory, the bytes the webhook answers, and records nothing.
func TestEvaluateMatchesTheWebhook(t *testing.T) {
	e := newE2E(t, pgtest.URL(t))
	e.onboard()
	token, err := adminauth.NewStore(e.m.Pool).Bootstrap(context.Background(), "test")
	if err != nil {
		t.Fatal(err)
	}
	admin := httpsClient(t, e.m.CAFile)
	nsReview := review("admission.k8s.io/v1", "ns1", "namespaces", "Namespace", "", "team-x", "CREATE",
		`{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"team-x","labels":{"env":"prod"}}}`, false)
	for _, rev := range []string{
		podReview("admission.k8s.io/v1", "e1", "default", goodPod, false),
		podReview("admission.k8s.io/v1", "e2", "default", noTeamPod, false),
		podReview("admission.k8s.io/v1beta1", "e3", "default", noTeamPod, false),
		nsReview,
	} {
		body, _ := json.Marshal(apiv1.EvaluateRequest{Review: json.RawMessage(rev)})
		req, _ := http.NewRequest(http.MethodPost, e.m.AdminURL()+"/api/v1/tenants/acme/clusters/prod/evaluate", bytes.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := admin.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		raw, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		var ev apiv1.EvaluateResponse
		if resp.StatusCode != 200 || json.Unmarshal(raw, &ev) != nil {
			t.Fatalf("evaluate = %d %s", resp.StatusCode, raw)
		}
		var uid struct{ Request struct{ UID string } }
		_ = json.Unmarshal([]byte(rev), &uid)
		if got := e.rec.byUID(uid.Request.UID); len(got) != 0 {
			t.Fatalf("evaluate recorded %d decisions", len(got))
		}
		// The webhook's learning is visible in the cached inventory at
		// once; evaluate must not learn.
		inv, err := e.m.Namespaces.Lookup(context.Background(), e.tenant.ID, e.cluster.ID)
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := inv.ProvisionalNamespace("team-x"); ok {
			t.Fatalf("evaluate of %s learnt a namespace", uid.Request.UID)
		}
		code, want := e.post(e.client, "/t/acme/validate", e.token, "application/json", rev)
		if code != 200 || !bytes.Equal(ev.Review, want) {
			t.Fatalf("evaluate:\n%s\nwebhook (%d):\n%s", ev.Review, code, want)
		}
		if len(ev.Trace) == 0 || ev.SnapshotVersion != 4 {
			t.Fatalf("trace %+v, snapshot %d", ev.Trace, ev.SnapshotVersion)
		}
	}
	inv, err := e.m.Namespaces.Lookup(context.Background(), e.tenant.ID, e.cluster.ID)
	if err != nil {
		t.Fatal(err)
	}
	// An allowed CREATE is provisional until something confirms it.
	if _, ok := inv.ProvisionalNamespace("team-x"); !ok {
		t.Fatal("the webhook did not learn team-x: the check above proves nothing")
	}
}
