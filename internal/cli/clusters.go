package cli

import (
	"fmt"
	"io"
	"net/http"
	"net/url"
	"time"

	"github.com/portcullis-dev/portcullis/internal/apiclient"
	"github.com/portcullis-dev/portcullis/internal/apiv1"
)

// authType maps --auth to the API's credential type.
func authType(s string) (string, error) {
	switch s {
	case "", "token":
		return apiv1.AuthToken, nil
	case "cert", "certificate":
		return apiv1.AuthCertificate, nil
	case "basic":
		return apiv1.AuthBasic, nil
	case "url":
		return apiv1.AuthURL, nil
	}
	return "", usageErr("--auth %q: use token, cert, basic or url", s)
}

func cmdClusterCreate(e *env, args []string) error {
	f := e.newFlags("cluster create")
	c := f.conn(true)
	tenant := tenantFlag(f)
	auth := f.String("auth", "token", "how the cluster's apiservers authenticate to the gateway: token, cert, basic, or url for a managed control plane (EKS, GKE, AKS) that cannot load an AdmissionConfiguration")
	webhookURL := f.String("webhook-url", "", "the gateway's webhook address as the apiservers reach it, https://host:port (default: the server's)")
	labelFlag := f.String("labels", "", "cluster labels, k=v,k=v")
	out := f.String("out", "", "directory for kubeconfig.yaml, admission-configuration.yaml and webhooks.yaml (created if missing; with --auth url, webhooks.yaml only)")
	desc := f.String("description", "", "description of the first credential")
	pos, err := f.parse(args, 1, 1, "NAME")
	if err != nil {
		return err
	}
	if err := required("tenant", *tenant, "out", *out); err != nil {
		return err
	}
	typ, err := authType(*auth)
	if err != nil {
		return err
	}
	lbls, err := parseLabels(*labelFlag)
	if err != nil {
		return err
	}
	// Before the cluster exists and its secret is issued, once.
	if err := prepareOut(*out); err != nil {
		return err
	}
	cl, err := e.connect(c)
	if err != nil {
		return err
	}
	if *desc == "" {
		*desc = "issued by admin cluster create"
	}
	req := apiv1.ClusterCreate{Name: pos[0], Labels: lbls,
		Credential: &apiv1.CredentialCreate{Type: typ, Description: *desc, WebhookURL: *webhookURL}}
	var created apiv1.ClusterCreated
	raw, err := cl.sendJSON(e, http.MethodPost, apiPath("tenants", *tenant, "clusters"), nil, req, &created)
	if err != nil {
		return namingFlags(err, map[string]string{"labels": "--labels", "credential.webhookURL": "--webhook-url"})
	}
	if created.Credential == nil {
		return fmt.Errorf("the server created cluster %q but issued no credential; issue one with `admin credential create --tenant %s --cluster %s --out %s`", pos[0], *tenant, pos[0], *out)
	}
	written, err := e.saveArtifacts(*out, created.Credential.Artifacts, raw)
	if err != nil {
		return fmt.Errorf("cluster %q was created, but writing its files failed; the server's answer, with the credential's secret and the files' contents, is printed above: %w", pos[0], err)
	}
	for _, w := range created.Credential.Artifacts.Warnings {
		fmt.Fprintf(e.stderr, "Warning: %s\n", w)
	}
	if created.Credential.URLSecret != "" {
		e.warnURLSecret()
	}
	return e.emit(c, raw, func(w io.Writer) error {
		cred := created.Credential.Credential
		fmt.Fprintf(w, "cluster %q created in tenant %q, with credential %d (%s)\n", created.Cluster.Name, created.Cluster.Tenant, cred.ID, cred.Type)
		for _, p := range written {
			fmt.Fprintf(w, "wrote %s\n", p)
		}
		fmt.Fprintln(w)
		fmt.Fprintln(w, wrap(wiringFor(*tenant, pos[0], *out, created.Credential.Artifacts), 78))
		return nil
	})
}

func cmdClusterList(e *env, args []string) error {
	f := e.newFlags("cluster list")
	c := f.conn(true)
	tenant := tenantFlag(f)
	selector := f.String("selector", "", "label selector, as kubectl's -l (env=prod,team in (a,b))")
	f.StringVar(selector, "l", "", "short for --selector")
	if _, err := f.parse(args, 0, 0, ""); err != nil {
		return err
	}
	if err := required("tenant", *tenant); err != nil {
		return err
	}
	cl, err := e.connect(c)
	if err != nil {
		return err
	}
	q := url.Values{}
	if *selector != "" {
		q.Set("labelSelector", *selector)
	}
	clusters, raw, err := listAll[apiv1.Cluster](e, cl, apiPath("tenants", *tenant, "clusters"), q)
	if err != nil {
		return namingFlags(err, map[string]string{"labelSelector": "--selector"})
	}
	return e.emit(c, raw, func(w io.Writer) error { return printClusters(w, e.now(), clusters) })
}

func printClusters(w io.Writer, now time.Time, clusters []apiv1.Cluster) error {
	t := newTable(w, "NAME", "LABELS", "AGE")
	for _, x := range clusters {
		t.row(x.Name, labels(x.Labels), age(now, x.CreatedAt))
	}
	return t.flush()
}

func cmdClusterDelete(e *env, args []string) error {
	f := e.newFlags("cluster delete")
	c := f.conn(false)
	tenant := tenantFlag(f)
	pos, err := f.parse(args, 1, 1, "NAME")
	if err != nil {
		return err
	}
	if err := required("tenant", *tenant); err != nil {
		return err
	}
	cl, err := e.connect(c)
	if err != nil {
		return err
	}
	if _, err := cl.do(e, apiclient.Request{Method: http.MethodDelete, Path: apiPath("tenants", *tenant, "clusters", pos[0])}); err != nil {
		return err
	}
	e.printf("cluster %q deleted from tenant %q\n", pos[0], *tenant)
	return nil
}
