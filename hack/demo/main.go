// Command demo helps `make run` build its demo, which is otherwise made
// with the admin CLI: files writes the demo cluster's namespace inventory
// (as `kubectl get namespaces -o yaml` prints it) and two AdmissionReviews
// (one the baseline policies allow, one they deny); send posts the reviews
// to the webhook as an apiserver would, with the credential of the
// kubeconfig that `admin cluster create --out` wrote, and prints the
// verdicts.
//
//	demo files --samples samples/baseline --dir .portcullis/demo
//	demo send --url https://localhost:8443/t/demo/validate --ca CA --dir .portcullis/demo
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
	"sigs.k8s.io/yaml"
)

func main() {
	if len(os.Args) < 2 || (os.Args[1] != "files" && os.Args[1] != "send") {
		fmt.Fprintln(os.Stderr, "usage: demo files|send [flags]")
		os.Exit(2)
	}
	fs := flag.NewFlagSet("demo "+os.Args[1], flag.ExitOnError)
	samples := fs.String("samples", "samples/baseline", "directory with pod.json (files)")
	dir := fs.String("dir", ".portcullis/demo", "directory of the demo's files and kubeconfig.yaml")
	webhookURL := fs.String("url", "", "the tenant's validate or mutate URL (send)")
	ca := fs.String("ca", ".portcullis/tls/ca.crt", "CA of the gateway's serving certificate (send)")
	_ = fs.Parse(os.Args[2:])
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var err error
	if os.Args[1] == "files" {
		err = files(*samples, *dir)
	} else {
		err = send(ctx, *webhookURL, *ca, *dir)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "demo: %v\n", err)
		os.Exit(1)
	}
}

// kubeconfigToken reads the bearer token of the kubeconfig that `admin
// cluster create --out` wrote.
func kubeconfigToken(path string) (string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	var kc struct {
		Users []struct {
			User struct {
				Token string `json:"token"`
			} `json:"user"`
		} `json:"users"`
	}
	if err := yaml.Unmarshal(b, &kc); err != nil {
		return "", fmt.Errorf("%s: %w", path, err)
	}
	for _, u := range kc.Users {
		if u.User.Token != "" {
			return u.User.Token, nil
		}
	}
	return "", fmt.Errorf("%s has no bearer token (the demo cluster uses --auth token)", path)
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
	token, err := kubeconfigToken(filepath.Join(dir, "kubeconfig.yaml"))
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
		req.Header.Set("Authorization", "Bearer "+token)
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
		if len(rev.Response.Patch) > 0 {
			fmt.Printf("  %-18s patch: %s\n", "", rev.Response.Patch)
		}
	}
	return nil
}

// files writes namespaces.yaml, allowed-pod.json and denied-pod.json.
func files(samples, out string) error {
	if err := os.MkdirAll(out, 0o700); err != nil {
		return err
	}
	list := corev1.NamespaceList{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "List"}}
	for _, ns := range []struct {
		name   string
		labels map[string]string
	}{{"default", nil}, {"kube-system", nil}, {"shop", map[string]string{"env": "prod", "team": "checkout"}}} {
		l := map[string]string{"kubernetes.io/metadata.name": ns.name}
		for k, v := range ns.labels {
			l[k] = v
		}
		list.Items = append(list.Items, corev1.Namespace{
			TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Namespace"},
			ObjectMeta: metav1.ObjectMeta{Name: ns.name, Labels: l},
			Status:     corev1.NamespaceStatus{Phase: corev1.NamespaceActive},
		})
	}
	nsYAML, err := yaml.Marshal(list)
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(out, "namespaces.yaml"), nsYAML, 0o644); err != nil {
		return err
	}

	pod, err := os.ReadFile(filepath.Join(samples, "pod.json"))
	if err != nil {
		return err
	}
	var bad map[string]any
	if err := json.Unmarshal(pod, &bad); err != nil {
		return fmt.Errorf("pod.json: %w", err)
	}
	spec, ok := bad["spec"].(map[string]any)
	if !ok {
		return errors.New("pod.json: no spec")
	}
	containers, ok := spec["containers"].([]any)
	if !ok || len(containers) == 0 {
		return errors.New("pod.json: no containers")
	}
	c0, ok := containers[0].(map[string]any)
	if !ok {
		return errors.New("pod.json: containers[0] is not an object")
	}
	c0["image"] = "docker.io/library/nginx:latest"
	c0["securityContext"] = map[string]any{"privileged": true}
	badPod, err := json.Marshal(bad)
	if err != nil {
		return err
	}
	for name, obj := range map[string][]byte{"allowed-pod.json": pod, "denied-pod.json": badPod} {
		if err := os.WriteFile(filepath.Join(out, name), review(name, obj), 0o644); err != nil {
			return err
		}
	}
	return nil
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
