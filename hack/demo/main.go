// Command demo seeds the `make run` demo: tenant "demo", cluster "kind-demo"
// with a bearer token, the baseline policy set from samples/baseline, the
// cluster's namespace inventory, and two AdmissionReviews (one the policies
// allow, one they deny) to send to the webhook. It is idempotent.
//
//	demo seed --database-url URL --samples samples/baseline --out .portcullis/demo
//	demo send --url https://localhost:8443/t/demo/validate --ca CA --dir .portcullis/demo
//	demo decisions --database-url URL
//
// send posts the two reviews as an apiserver would and prints the verdicts;
// decisions prints the tenant's latest stored decisions.
package main

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/portcullis-dev/portcullis/internal/database"
	"github.com/portcullis-dev/portcullis/internal/policystore"
	"github.com/portcullis-dev/portcullis/internal/tenancy"
)

const (
	tenantName  = "demo"
	clusterName = "kind-demo"
)

func main() {
	if len(os.Args) < 2 || (os.Args[1] != "seed" && os.Args[1] != "send" && os.Args[1] != "decisions") {
		fmt.Fprintln(os.Stderr, "usage: demo seed|send|decisions [flags]")
		os.Exit(2)
	}
	fs := flag.NewFlagSet("demo "+os.Args[1], flag.ExitOnError)
	url := fs.String("database-url", os.Getenv("PORTCULLIS_DATABASE_URL"), "PostgreSQL URL (seed, decisions)")
	samples := fs.String("samples", "samples/baseline", "directory with policies.yaml, bindings.yaml and pod.json (seed)")
	dir := fs.String("dir", ".portcullis/demo", "directory for the token and the sample reviews")
	webhookURL := fs.String("url", "", "the tenant's validate URL (send)")
	ca := fs.String("ca", ".portcullis/tls/ca.crt", "CA of the gateway's serving certificate (send)")
	_ = fs.Parse(os.Args[2:])
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var err error
	switch os.Args[1] {
	case "seed":
		err = seed(ctx, *url, *samples, *dir)
	case "send":
		err = send(ctx, *webhookURL, *ca, *dir)
	default:
		err = listDecisions(ctx, *url)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "demo: %v\n", err)
		os.Exit(1)
	}
}

// send posts each sample review and prints the gateway's verdict.
func send(ctx context.Context, url, caFile, dir string) error {
	caPEM, err := os.ReadFile(caFile)
	if err != nil {
		return err
	}
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(caPEM)
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{RootCAs: roots}, ForceAttemptHTTP2: true}}
	token, err := os.ReadFile(filepath.Join(dir, "token"))
	if err != nil {
		return err
	}
	for _, name := range []string{"allowed-pod.json", "denied-pod.json"} {
		body, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			return err
		}
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, url+"?timeout=10s", bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer "+strings.TrimSpace(string(token)))
		resp, err := client.Do(req)
		if err != nil {
			return err
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("%s: HTTP %d: %s", name, resp.StatusCode, b)
		}
		var rev admissionv1.AdmissionReview
		if err := json.Unmarshal(b, &rev); err != nil || rev.Response == nil {
			return fmt.Errorf("%s: not an AdmissionReview: %s", name, b)
		}
		if rev.Response.Allowed {
			fmt.Printf("  %-18s allowed\n", name)
		} else {
			fmt.Printf("  %-18s denied (%d): %s\n", name, rev.Response.Result.Code, rev.Response.Result.Message)
		}
		for _, w := range rev.Response.Warnings {
			fmt.Printf("  %-18s warning: %s\n", "", w)
		}
	}
	return nil
}

func seed(ctx context.Context, url, samples, out string) error {
	pool, err := database.Open(ctx, url)
	if err != nil {
		return err
	}
	defer pool.Close()
	ts := tenancy.NewStore(pool, nil)
	ps := policystore.New(pool)

	tenant, err := ts.FindTenantByName(ctx, tenantName)
	if tenancy.ErrorCode(err) == tenancy.CodeNotFound {
		tenant, err = ts.CreateTenant(ctx, tenantName, "Demo tenant")
	}
	if err != nil {
		return fmt.Errorf("tenant: %w", err)
	}
	cluster, err := ts.FindClusterByName(ctx, tenant.ID, clusterName)
	if tenancy.ErrorCode(err) == tenancy.CodeNotFound {
		cluster, err = ts.CreateCluster(ctx, tenant.ID, clusterName, map[string]string{"env": "dev"})
	}
	if err != nil {
		return fmt.Errorf("cluster: %w", err)
	}
	if err := os.MkdirAll(out, 0o700); err != nil {
		return err
	}
	tokenFile := filepath.Join(out, "token")
	if _, err := os.Stat(tokenFile); errors.Is(err, os.ErrNotExist) {
		issued, err := ts.CreateToken(ctx, tenant.ID, cluster.ID, tenancy.CredentialOptions{Description: "make run demo"})
		if err != nil {
			return fmt.Errorf("token: %w", err)
		}
		if err := os.WriteFile(tokenFile, []byte(issued.Token+"\n"), 0o600); err != nil {
			return err
		}
	}

	for _, f := range []string{"policies.yaml", "bindings.yaml"} {
		b, err := os.ReadFile(filepath.Join(samples, f))
		if err != nil {
			return err
		}
		for i, doc := range splitYAML(b) {
			if _, err := ps.Apply(ctx, tenant.ID, "make-run-demo", doc); err != nil {
				return fmt.Errorf("%s, document %d: %w", f, i+1, err)
			}
		}
	}

	var nss []*corev1.Namespace
	for name, labels := range map[string]map[string]string{
		"default": nil, "kube-system": nil, "shop": {"env": "prod", "team": "checkout"},
	} {
		l := map[string]string{"kubernetes.io/metadata.name": name}
		for k, v := range labels {
			l[k] = v
		}
		nss = append(nss, &corev1.Namespace{
			TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Namespace"},
			ObjectMeta: metav1.ObjectMeta{Name: name, Labels: l},
			Status:     corev1.NamespaceStatus{Phase: corev1.NamespaceActive},
		})
	}
	if err := ps.ReplaceNamespaces(ctx, tenant.ID, cluster.ID, nss); err != nil {
		return fmt.Errorf("namespaces: %w", err)
	}

	pod, err := os.ReadFile(filepath.Join(samples, "pod.json"))
	if err != nil {
		return err
	}
	var bad map[string]any
	if err := json.Unmarshal(pod, &bad); err != nil {
		return fmt.Errorf("pod.json: %w", err)
	}
	spec := bad["spec"].(map[string]any)
	c0 := spec["containers"].([]any)[0].(map[string]any)
	c0["image"] = "docker.io/library/nginx:latest"
	c0["securityContext"] = map[string]any{"privileged": true}
	badPod, _ := json.Marshal(bad)
	for name, obj := range map[string][]byte{"allowed-pod.json": pod, "denied-pod.json": badPod} {
		if err := os.WriteFile(filepath.Join(out, name), review(name, obj), 0o644); err != nil {
			return err
		}
	}
	fmt.Printf("tenant %q, cluster %q: baseline policies applied, namespaces uploaded\n", tenant.Name, cluster.Name)
	return nil
}

// splitYAML splits a multi-document YAML file, dropping empty documents.
func splitYAML(b []byte) [][]byte {
	var docs [][]byte
	for _, d := range bytes.Split(b, []byte("\n---")) {
		if len(bytes.TrimSpace(d)) > 0 && strings.Contains(string(d), "kind:") {
			docs = append(docs, d)
		}
	}
	return docs
}

func review(uid string, pod []byte) []byte {
	var meta struct {
		Metadata struct{ Name, Namespace string }
	}
	_ = json.Unmarshal(pod, &meta)
	b, _ := json.MarshalIndent(map[string]any{
		"apiVersion": "admission.k8s.io/v1",
		"kind":       "AdmissionReview",
		"request": map[string]any{
			"uid":             strings.TrimSuffix(uid, ".json"),
			"kind":            map[string]string{"group": "", "version": "v1", "kind": "Pod"},
			"resource":        map[string]string{"group": "", "version": "v1", "resource": "pods"},
			"requestKind":     map[string]string{"group": "", "version": "v1", "kind": "Pod"},
			"requestResource": map[string]string{"group": "", "version": "v1", "resource": "pods"},
			"name":            meta.Metadata.Name,
			"namespace":       meta.Metadata.Namespace,
			"operation":       "CREATE",
			"userInfo":        map[string]any{"username": "system:serviceaccount:kube-system:replicaset-controller", "groups": []string{"system:serviceaccounts", "system:authenticated"}},
			"object":          json.RawMessage(pod),
			"oldObject":       nil,
			"dryRun":          false,
			"options":         map[string]string{"apiVersion": "meta.k8s.io/v1", "kind": "CreateOptions"},
		},
	}, "", "  ")
	return b
}
