package cli

import (
	"fmt"
	"io"
	"net/url"

	"github.com/portcullis-dev/portcullis/internal/apiv1"
)

// cmdClusterArtifacts rewrites a cluster's admission-configuration.yaml and
// webhooks.yaml from the tenant's policies as they are now (status writes
// are sent only when a policy needs them), without issuing a credential:
// the kubeconfig already installed stays valid. A new credential comes
// from `admin credential create --out DIR`.
func cmdClusterArtifacts(e *env, args []string) error {
	f := e.newFlags("cluster artifacts")
	c := f.conn(true)
	tenant := tenantFlag(f)
	webhookURL := f.String("webhook-url", "", "the gateway's webhook address as the apiservers reach it, https://host:port (default: the server's)")
	out := f.String("out", "", "directory for admission-configuration.yaml and webhooks.yaml (created if missing)")
	pos, err := f.parse(args, 1, 1, "NAME")
	if err != nil {
		return err
	}
	if err := required("tenant", *tenant, "out", *out); err != nil {
		return err
	}
	if err := prepareOut(*out); err != nil {
		return err
	}
	cl, err := e.connect(c)
	if err != nil {
		return err
	}
	q := url.Values{}
	if *webhookURL != "" {
		q.Set("webhookURL", *webhookURL)
	}
	var a apiv1.Artifacts
	raw, err := cl.getJSON(e, apiPath("tenants", *tenant, "clusters", pos[0], "artifacts"), q, &a)
	if err != nil {
		return namingFlags(err, map[string]string{"webhookURL": "--webhook-url"})
	}
	a.Kubeconfig = "" // never sent without a credential; never overwrite one
	written, err := writeArtifacts(*out, a)
	if err != nil {
		return fmt.Errorf("writing the artifacts of cluster %q: %w", pos[0], err)
	}
	for _, w := range a.Warnings {
		fmt.Fprintf(e.stderr, "Warning: %s\n", w)
	}
	return e.emit(c, raw, func(w io.Writer) error {
		for _, p := range written {
			fmt.Fprintf(w, "wrote %s\n", p)
		}
		fmt.Fprintf(w, "apply %s/webhooks.yaml to cluster %q (kubectl apply -f); its credential is unchanged\n", *out, pos[0])
		return nil
	})
}
