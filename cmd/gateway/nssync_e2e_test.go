package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/portcullis-dev/portcullis/internal/cli"
	"github.com/portcullis-dev/portcullis/internal/pgtest"
	"github.com/portcullis-dev/portcullis/internal/testutil"
)

// fakeAPIServer speaks the list and watch protocol of a kube-apiserver for
// namespaces and CRDs, on 127.0.0.1: a list, then watch streams that send
// carries events to.
type fakeAPIServer struct {
	*httptest.Server
	mu sync.Mutex
	// watchers are the open namespace watch streams. A client may give up
	// a stream and open another before the first is closed, so an event
	// goes to all of them.
	watchers map[chan string]bool
	// crds is the CRD list it serves.
	crds string
}

func (f *fakeAPIServer) setCRDs(list string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.crds = list
}

// send writes a namespace watch event (JSON) to every open stream.
func (f *fakeAPIServer) send(ev string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for ch := range f.watchers {
		ch <- ev
	}
}

func (f *fakeAPIServer) watching() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.watchers) > 0
}

const fakeNamespaces = `{"kind":"NamespaceList","apiVersion":"v1","metadata":{"resourceVersion":"10"},"items":[
 {"metadata":{"name":"default","resourceVersion":"1","labels":{"kubernetes.io/metadata.name":"default"}},"status":{"phase":"Active"}},
 {"metadata":{"name":"shop","resourceVersion":"2","labels":{"kubernetes.io/metadata.name":"shop","env":"prod"}},"status":{"phase":"Active"}}]}`

const fakeCRDs = `{"kind":"CustomResourceDefinitionList","apiVersion":"apiextensions.k8s.io/v1","metadata":{"resourceVersion":"10"},"items":[
 {"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition","metadata":{"name":"widgets.example.com","resourceVersion":"3"},
  "spec":{"group":"example.com","names":{"kind":"Widget","plural":"widgets"},"scope":"Namespaced",
   "versions":[{"name":"v1","served":true,"storage":true}]}}]}`

func newFakeAPIServer(t *testing.T) *fakeAPIServer {
	f := &fakeAPIServer{watchers: map[chan string]bool{}, crds: fakeCRDs}
	f.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		list, kind := "", ""
		switch r.URL.Path {
		case "/api/v1/namespaces":
			list, kind = fakeNamespaces, `"apiVersion":"v1","kind":"Namespace"`
		case "/apis/apiextensions.k8s.io/v1/customresourcedefinitions":
			f.mu.Lock()
			list, kind = f.crds, `"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition"`
			f.mu.Unlock()
		default:
			http.NotFound(w, r)
			return
		}
		if r.URL.Query().Get("watch") != "true" {
			fmt.Fprint(w, list)
			return
		}
		w.WriteHeader(http.StatusOK)
		// A streaming list (client-go's WatchList): the items as ADDED
		// events, then the bookmark that ends them.
		if r.URL.Query().Get("sendInitialEvents") == "true" {
			var l struct{ Items []json.RawMessage }
			_ = json.Unmarshal([]byte(list), &l)
			for _, item := range l.Items {
				fmt.Fprintf(w, `{"type":"ADDED","object":%s}`+"\n", item)
			}
			fmt.Fprintf(w, `{"type":"BOOKMARK","object":{%s,"metadata":{"resourceVersion":"10","annotations":{"k8s.io/initial-events-end":"true"}}}}`+"\n", kind)
		}
		w.(http.Flusher).Flush()
		if r.URL.Path != "/api/v1/namespaces" {
			<-r.Context().Done()
			return
		}
		events := make(chan string, 10)
		f.mu.Lock()
		f.watchers[events] = true
		f.mu.Unlock()
		defer func() {
			f.mu.Lock()
			delete(f.watchers, events)
			f.mu.Unlock()
		}()
		for {
			select {
			case <-r.Context().Done():
				return
			case ev := <-events:
				fmt.Fprintln(w, ev)
				w.(http.Flusher).Flush()
			}
		}
	}))
	// Watch streams end only when their client goes: cut them first.
	t.Cleanup(func() { f.CloseClientConnections(); f.Close() })
	return f
}

func (f *fakeAPIServer) kubeconfig(t *testing.T) string {
	p := filepath.Join(t.TempDir(), "kubeconfig")
	cfg := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters: [{name: fake, cluster: {server: %q}}]
users: [{name: reader, user: {token: read-only}}]
contexts: [{name: fake, context: {cluster: fake, user: reader}}]
current-context: fake
`, f.URL)
	if err := os.WriteFile(p, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// The namespace sync (issue 21, section 1) reads the cluster's apiserver
// with client-go and pushes to the real admin API with a sync token that
// can do nothing else; while it runs, the gateway learns nothing from the
// cluster's traffic.
func TestNamespaceSync(t *testing.T) {
	e := newE2E(t, pgtest.URL(t))
	e.onboard()
	a := operatorCLI(t, e)
	out := a.ok("token", "create", "--name", "prod-sync", "--role", "sync", "--tenant", "acme", "--cluster", "prod")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	syncCLI := a.withToken(lines[len(lines)-1])
	api := newFakeAPIServer(t)
	kc := api.kubeconfig(t)
	ctx := context.Background()

	// The sync token reaches nothing but its cluster's inventory.
	syncCLI.fails(1, "sync token", "cluster", "list", "--tenant", "acme")
	syncCLI.fails(1, "sync token", "get", "namespaces", "--tenant", "acme", "--cluster", "prod")

	// Once: list and push.
	out = syncCLI.ok("namespaces", "sync", "--tenant", "acme", "--cluster", "prod", "--kubeconfig", kc)
	if !strings.Contains(out, "2 namespaces") || !strings.Contains(out, "1 CRDs") {
		t.Fatalf("sync: %q", out)
	}
	nss, err := e.m.Inventory.ListNamespaces(ctx, e.tenant.ID, e.cluster.ID)
	if err != nil || len(nss) != 2 || nss[1].Name != "shop" || nss[1].Labels["env"] != "prod" {
		t.Fatalf("inventory after the sync: %v %v", nss, err)
	}
	if crds, err := e.m.Inventory.ListCRDs(ctx, e.tenant.ID, e.cluster.ID); err != nil || len(crds) != 1 {
		t.Fatalf("CRDs after the sync: %v %v", crds, err)
	}
	// A cluster whose CRDs were all removed empties the CRD inventory.
	api.setCRDs(`{"kind":"CustomResourceDefinitionList","apiVersion":"apiextensions.k8s.io/v1","metadata":{"resourceVersion":"10"},"items":[]}`)
	out = syncCLI.ok("namespaces", "sync", "--tenant", "acme", "--cluster", "prod", "--kubeconfig", kc)
	if !strings.Contains(out, "0 CRDs") {
		t.Fatalf("sync with no CRDs: %q", out)
	}
	if crds, err := e.m.Inventory.ListCRDs(ctx, e.tenant.ID, e.cluster.ID); err != nil || len(crds) != 0 {
		t.Fatalf("CRDs after a sync of none: %v %v", crds, err)
	}

	// Learning from traffic is off while the sync runs.
	const v1 = "admission.k8s.io/v1"
	ns := `{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"team-x","labels":{"env":"dev"}}}`
	_, body := e.post(e.client, "/t/acme/validate", e.token, "application/json", review(v1, "ns1", "namespaces", "Namespace", "", "team-x", "CREATE", ns, false))
	if !verify(t, v1, "ns1", body).Allowed {
		t.Fatalf("namespace CREATE denied: %s", body)
	}
	inv, err := e.m.Namespaces.Lookup(ctx, e.tenant.ID, e.cluster.ID)
	if err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, 0, "the gateway to see the sync", func() bool { return inv.Synced(time.Now()) })
	_, body = e.post(e.client, "/t/acme/validate", e.token, "application/json", review(v1, "ns2", "namespaces", "Namespace", "", "team-y", "CREATE", ns, false))
	if _, ok := inv.ProvisionalNamespace("team-y"); ok || !verify(t, v1, "ns2", body).Allowed {
		t.Fatal("a synced cluster learned from traffic")
	}

	// Watch: a namespace added in the cluster reaches the inventory.
	wctx, cancel := context.WithCancel(ctx)
	done := make(chan int, 1)
	var stdout, stderr strings.Builder
	// Stopped before the fake apiserver closes, whatever the test's outcome.
	t.Cleanup(func() {
		cancel()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
		}
		if t.Failed() {
			t.Logf("sync --watch said:\n%s\n%s", stdout.String(), stderr.String())
		}
	})
	go func() {
		done <- cli.Run(wctx, []string{"namespaces", "sync", "--tenant", "acme", "--cluster", "prod", "--kubeconfig", kc, "--watch"},
			cli.Process{Stdout: &syncWriter{b: &stdout}, Stderr: &syncWriter{b: &stderr}, Getenv: func(k string) string { return syncCLI.env[k] }})
	}()
	testutil.Eventually(t, 0, "the sync to watch", api.watching)
	added, _ := json.Marshal(map[string]any{"type": "ADDED", "object": map[string]any{"apiVersion": "v1", "kind": "Namespace",
		"metadata": map[string]any{"name": "batch", "resourceVersion": "11", "labels": map[string]string{"env": "prod"}}}})
	api.send(string(added))
	testutil.Eventually(t, 0, "the watched namespace to reach the inventory", func() bool {
		got, ok := inv.Namespace("batch")
		return ok && got.Labels["env"] == "prod"
	})
	deleted, _ := json.Marshal(map[string]any{"type": "DELETED", "object": map[string]any{"apiVersion": "v1", "kind": "Namespace",
		"metadata": map[string]any{"name": "shop", "resourceVersion": "12"}}})
	api.send(string(deleted))
	testutil.Eventually(t, 0, "the deleted namespace to leave the inventory", func() bool {
		_, ok := inv.Namespace("shop")
		return !ok
	})
	cancel()
	select {
	case code := <-done:
		done <- code // for the cleanup
		if code != 0 {
			t.Fatalf("sync --watch exited %d: %s", code, stderr.String())
		}
	case <-time.After(10 * time.Second):
		t.Fatal("sync --watch did not stop")
	}
}

// syncWriter is a strings.Builder safe for the CLI's goroutine and the
// test's.
type syncWriter struct {
	mu sync.Mutex
	b  *strings.Builder
}

func (w *syncWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.Write(p)
}
