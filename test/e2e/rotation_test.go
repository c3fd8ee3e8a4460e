package e2e

import (
	"context"
	"encoding/json"
	"strconv"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// checkRotation rotates the cluster's credential with no grace, as
// docs/cli.md describes rotation: kube-apiserver reads the webhook
// kubeconfig only when it starts, so the running one keeps sending the
// revoked credential and, the webhooks failing closed, admits nothing;
// restarted with the new kubeconfig (same etcd, so same webhooks and
// objects), it works again.
func checkRotation(t *testing.T, g *gateway, api *apiServer, apiserverBin, etcd, cluster string) {
	t.Helper()
	ctx := context.Background()
	var creds struct {
		Items []struct {
			ID     int64 `json:"id"`
			Active bool  `json:"active"`
		}
	}
	raw := g.run(t, "credential", "list", "--tenant", tenant, "--cluster", cluster, "--active", "-o", "json")
	if err := json.Unmarshal([]byte(raw), &creds); err != nil || len(creds.Items) != 1 {
		t.Fatalf("credential list: %v, want one active credential:\n%s", err, raw)
	}
	out := t.TempDir()
	g.run(t, "credential", "rotate", strconv.FormatInt(creds.Items[0].ID, 10), "--tenant", tenant, "--cluster", cluster,
		"--grace", "0s", "--out", out)

	probe := samplePod(t, "api-rotated")
	dryRun := metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}
	cs, err := kubernetes.NewForConfig(api.config)
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, "the revoked credential to be refused", func() bool {
		_, err := cs.CoreV1().Pods(namespace).Create(ctx, probe, dryRun)
		return err != nil && strings.Contains(err.Error(), `failed calling webhook "mutate.portcullis.dev"`)
	})

	api.stop()
	api = startAPIServer(t, apiserverBin, etcd, cluster, installAdmissionConfiguration(t, out))
	if cs, err = kubernetes.NewForConfig(api.config); err != nil {
		t.Fatal(err)
	}
	pods := cs.CoreV1().Pods(namespace)
	// The restarted apiserver reads the webhook configurations from etcd
	// through an informer.
	eventually(t, time.Minute, "the restarted apiserver to call the gateway", func() bool {
		_, err := pods.Create(ctx, probe, dryRun)
		return err == nil
	})
	created, err := pods.Create(ctx, probe, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create %s after the rotation: %v", probe.Name, err)
	}
	checkMutations(t, "the Pod after the rotation", probe, created)
}
