package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/portcullis-dev/portcullis/internal/apiv1"
)

func cmdLogin(e *env, args []string) error {
	f := e.newFlags("login")
	c := f.conn(false)
	if _, err := f.parse(args, 0, 0, ""); err != nil {
		return err
	}
	cfg := e.flagsOrEnv(c)
	if err := required("server", cfg.Server, "token", cfg.Token); err != nil {
		return err
	}
	cfg.Server = strings.TrimRight(cfg.Server, "/")
	if cfg.CAFile != "" {
		// The config file is read from anywhere later.
		abs, err := filepath.Abs(cfg.CAFile)
		if err != nil {
			return err
		}
		cfg.CAFile = abs
	}
	cl, err := newClient(cfg)
	if err != nil {
		return err
	}
	var who apiv1.WhoAmI
	if _, err := cl.getJSON(e, apiPath("whoami"), nil, &who); err != nil {
		return fmt.Errorf("checking the token: %w", err)
	}
	path, err := e.configPath(c.config)
	if err != nil {
		return err
	}
	if err := writeConfig(path, cfg); err != nil {
		return err
	}
	e.printf("Logged in to %s as %s. Saved in %s.\n", cfg.Server, describeWho(who), path)
	return nil
}

func describeWho(w apiv1.WhoAmI) string {
	s := fmt.Sprintf("%q (token %d), ", w.Name, w.TokenID)
	if w.Tenant != "" {
		s += fmt.Sprintf("%s of tenant %q", w.Role, w.Tenant)
	} else {
		s += w.Role
	}
	if w.ExpiresAt != nil {
		s += ", expires " + w.ExpiresAt.Format(time.RFC3339)
	}
	return s
}

func cmdWhoAmI(e *env, args []string) error {
	f := e.newFlags("whoami")
	c := f.conn(true)
	if _, err := f.parse(args, 0, 0, ""); err != nil {
		return err
	}
	cl, err := e.connect(c)
	if err != nil {
		return err
	}
	var who apiv1.WhoAmI
	raw, err := cl.getJSON(e, apiPath("whoami"), nil, &who)
	if err != nil {
		return err
	}
	return e.emit(c, raw, func(w io.Writer) error {
		_, err := fmt.Fprintf(w, "%s at %s\n", describeWho(who), cl.base)
		return err
	})
}

// Tenants.

func cmdTenantCreate(e *env, args []string) error {
	f := e.newFlags("tenant create")
	c := f.conn(true)
	display := f.String("display-name", "", "a human name for the tenant")
	pos, err := f.parse(args, 1, 1, "NAME")
	if err != nil {
		return err
	}
	cl, err := e.connect(c)
	if err != nil {
		return err
	}
	var t apiv1.Tenant
	raw, err := cl.sendJSON(e, http.MethodPost, apiPath("tenants"), nil, apiv1.TenantCreate{Name: pos[0], DisplayName: *display}, &t)
	if err != nil {
		return err
	}
	return e.emit(c, raw, func(w io.Writer) error {
		_, err := fmt.Fprintf(w, "tenant %q created\n", t.Name)
		return err
	})
}

func cmdTenantList(e *env, args []string) error {
	f := e.newFlags("tenant list")
	c := f.conn(true)
	if _, err := f.parse(args, 0, 0, ""); err != nil {
		return err
	}
	cl, err := e.connect(c)
	if err != nil {
		return err
	}
	tenants, raw, err := listAll[apiv1.Tenant](e, cl, apiPath("tenants"), nil)
	if err != nil {
		return err
	}
	return e.emit(c, raw, func(w io.Writer) error { return printTenants(w, e.now(), tenants) })
}

func printTenants(w io.Writer, now time.Time, tenants []apiv1.Tenant) error {
	t := newTable(w, "NAME", "DISPLAY NAME", "AGE")
	for _, x := range tenants {
		t.row(x.Name, x.DisplayName, age(now, x.CreatedAt))
	}
	return t.flush()
}

func cmdTenantDelete(e *env, args []string) error {
	f := e.newFlags("tenant delete")
	c := f.conn(false)
	pos, err := f.parse(args, 1, 1, "NAME")
	if err != nil {
		return err
	}
	cl, err := e.connect(c)
	if err != nil {
		return err
	}
	if _, err := cl.do(e, request{method: http.MethodDelete, path: apiPath("tenants", pos[0])}); err != nil {
		return err
	}
	e.printf("tenant %q deleted\n", pos[0])
	return nil
}

// Clusters.

func tenantFlag(f *flags) *string {
	return f.String("tenant", "", "the tenant")
}

func clusterFlag(f *flags) *string {
	return f.String("cluster", "", "the cluster")
}

// authType maps --auth to the API's credential type.
func authType(s string) (string, error) {
	switch s {
	case "", "token":
		return apiv1.AuthToken, nil
	case "cert", "certificate":
		return apiv1.AuthCertificate, nil
	case "basic":
		return apiv1.AuthBasic, nil
	}
	return "", usageErr("--auth %q: use token, cert or basic", s)
}

func cmdClusterCreate(e *env, args []string) error {
	f := e.newFlags("cluster create")
	c := f.conn(true)
	tenant := tenantFlag(f)
	auth := f.String("auth", "token", "how the cluster's apiservers authenticate to the gateway: token, cert or basic")
	webhookURL := f.String("webhook-url", "", "the gateway's webhook address as the apiservers reach it, https://host:port (default: the server's)")
	labelFlag := f.String("labels", "", "cluster labels, k=v,k=v")
	out := f.String("out", "", "directory for kubeconfig.yaml, admission-configuration.yaml and webhooks.yaml (created if missing)")
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
		return err
	}
	if created.Credential == nil {
		return fmt.Errorf("the server created cluster %q but issued no credential; issue one with `admin credential create --tenant %s --cluster %s --out %s`", pos[0], *tenant, pos[0], *out)
	}
	written, err := e.saveArtifacts(*out, created.Credential.Artifacts, raw)
	if err != nil {
		return fmt.Errorf("cluster %q was created, but writing its files failed; the server's answer, with the credential's secret and the files' contents, is printed above: %w", pos[0], err)
	}
	return e.emit(c, raw, func(w io.Writer) error {
		cred := created.Credential.Credential
		fmt.Fprintf(w, "cluster %q created in tenant %q, with credential %d (%s)\n", created.Cluster.Name, created.Cluster.Tenant, cred.ID, cred.Type)
		for _, p := range written {
			fmt.Fprintf(w, "wrote %s\n", p)
		}
		fmt.Fprintln(w)
		fmt.Fprintln(w, wrap(wiring(*tenant, pos[0], *out, created.Credential.Artifacts), 78))
		return nil
	})
}

// artifactFiles are the files of --out, in the order they are written.
var artifactFiles = []string{"kubeconfig.yaml", "admission-configuration.yaml", "webhooks.yaml"}

// prepareOut creates the --out directory and checks that its files can be
// written, before the server is asked for a secret it shows only once.
func prepareOut(dir string) error {
	fail := func(err error) error { return exitError{exitUsage, fmt.Errorf("--out %s: %w", dir, err)} }
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fail(err)
	}
	probe, err := os.CreateTemp(dir, ".admin-write-check-*")
	if err != nil {
		return fail(err)
	}
	probe.Close()
	if err := os.Remove(probe.Name()); err != nil {
		return fail(err)
	}
	for _, name := range artifactFiles {
		p := filepath.Join(dir, name)
		st, err := os.Stat(p)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			continue
		case err != nil:
			return fail(err)
		case !st.Mode().IsRegular():
			return fail(fmt.Errorf("%s is not a regular file", p))
		}
		// An existing file is overwritten: it must be writable. Opened
		// without O_TRUNC, it is left as it is.
		f, err := os.OpenFile(p, os.O_WRONLY, 0)
		if err != nil {
			return fail(err)
		}
		f.Close()
	}
	return nil
}

// saveArtifacts writes the artifacts of a new credential to dir. If that
// fails, the server's answer goes to stdout, so that the secret it holds,
// shown only this once, is not lost.
func (e *env) saveArtifacts(dir string, a apiv1.Artifacts, raw []byte) ([]string, error) {
	written, err := writeArtifacts(dir, a)
	if err != nil {
		e.printf("%s\n", indentJSON(raw))
	}
	return written, err
}

// writeArtifacts writes the files `cluster create` and `credential create
// --out` promise. The kubeconfig holds a secret.
func writeArtifacts(dir string, a apiv1.Artifacts) ([]string, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	var written []string
	for _, f := range []struct {
		name, content string
		mode          os.FileMode
	}{
		{artifactFiles[0], a.Kubeconfig, 0o600},
		{artifactFiles[1], a.AdmissionConfiguration, 0o644},
		{artifactFiles[2], a.Webhooks, 0o644},
	} {
		if f.content == "" {
			continue
		}
		p := filepath.Join(dir, f.name)
		if err := os.WriteFile(p, []byte(f.content), f.mode); err != nil {
			return written, err
		}
		// WriteFile keeps the mode of a file that existed.
		if err := os.Chmod(p, f.mode); err != nil {
			return written, err
		}
		written = append(written, p)
	}
	return written, nil
}

// kubeconfigPath is the path the AdmissionConfiguration tells apiservers to
// read the kubeconfig from.
func kubeconfigPath(admissionConfiguration string) string {
	var cfg struct {
		Plugins []struct {
			Configuration struct {
				KubeConfigFile string `json:"kubeConfigFile"`
			} `json:"configuration"`
		} `json:"plugins"`
	}
	if yaml.Unmarshal([]byte(admissionConfiguration), &cfg) == nil {
		for _, p := range cfg.Plugins {
			if p.Configuration.KubeConfigFile != "" {
				return p.Configuration.KubeConfigFile
			}
		}
	}
	return ""
}

// wiring is the one paragraph on how to connect a cluster. Namespaces come
// first: bindings that select namespaces by label cannot be decided for
// namespaces the gateway has not seen.
func wiring(tenant, cluster, dir string, a apiv1.Artifacts) string {
	kc := kubeconfigPath(a.AdmissionConfiguration)
	where := "the path that admission-configuration.yaml names"
	if kc != "" {
		where = kc
	}
	return fmt.Sprintf("To wire the cluster in: first upload its namespaces with "+
		"`kubectl get namespaces -o yaml | admin namespaces import --tenant %s --cluster %s -f -`, "+
		"because bindings that select namespaces by label cannot be decided for namespaces the gateway has not seen; "+
		"then, on every control-plane node, copy %s to %s and %s next to it, and start kube-apiserver with "+
		"--admission-control-config-file pointing at admission-configuration.yaml; "+
		"finally run `kubectl apply -f %s`, and from then on the apiservers send their admission reviews to the gateway.",
		tenant, cluster,
		filepath.Join(dir, "kubeconfig.yaml"), where, filepath.Join(dir, "admission-configuration.yaml"),
		filepath.Join(dir, "webhooks.yaml"))
}

// wrap breaks s into lines of at most width columns, at spaces, but never
// inside a `command`, so that commands can be copied whole.
func wrap(s string, width int) string {
	var words []string
	for i, part := range strings.Split(s, "`") {
		if i%2 == 1 {
			words = append(words, "`"+part+"`")
			continue
		}
		fields := strings.Fields(part)
		// Punctuation right after a command stays on its line.
		if len(words) > 0 && len(fields) > 0 && !strings.HasPrefix(part, " ") {
			words[len(words)-1] += fields[0]
			fields = fields[1:]
		}
		words = append(words, fields...)
	}
	var b strings.Builder
	col := 0
	for _, word := range words {
		switch {
		case col == 0:
		case col+1+len(word) > width:
			b.WriteByte('\n')
			col = 0
		default:
			b.WriteByte(' ')
			col++
		}
		b.WriteString(word)
		col += len(word)
	}
	return b.String()
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
		return err
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
	if _, err := cl.do(e, request{method: http.MethodDelete, path: apiPath("tenants", *tenant, "clusters", pos[0])}); err != nil {
		return err
	}
	e.printf("cluster %q deleted from tenant %q\n", pos[0], *tenant)
	return nil
}

// Credentials.

func cmdCredentialList(e *env, args []string) error {
	f := e.newFlags("credential list")
	c := f.conn(true)
	tenant, cluster := tenantFlag(f), clusterFlag(f)
	active := f.Bool("active", false, "leave revoked and expired credentials out")
	if _, err := f.parse(args, 0, 0, ""); err != nil {
		return err
	}
	if err := required("tenant", *tenant, "cluster", *cluster); err != nil {
		return err
	}
	cl, err := e.connect(c)
	if err != nil {
		return err
	}
	creds, raw, err := listAll[apiv1.Credential](e, cl, apiPath("tenants", *tenant, "clusters", *cluster, "credentials"), activeOnly(*active))
	if err != nil {
		return err
	}
	return e.emit(c, raw, func(w io.Writer) error { return printCredentials(w, e.now(), creds) })
}

func printCredentials(w io.Writer, now time.Time, creds []apiv1.Credential) error {
	t := newTable(w, "ID", "TYPE", "IDENTITY", "DESCRIPTION", "STATUS", "EXPIRES", "LAST USED", "AGE")
	for _, x := range creds {
		identity := x.Username
		if x.Fingerprint != "" {
			identity = x.Fingerprint
			if len(identity) > 23 {
				identity = identity[:23] + "..."
			}
		}
		t.row(strconv.FormatInt(x.ID, 10), x.Type, identity, x.Description,
			credentialStatus(now, x.Active, x.RevokedAt, x.ExpiresAt), until(now, x.ExpiresAt), ago(now, x.LastUsedAt), age(now, x.CreatedAt))
	}
	return t.flush()
}

func activeOnly(on bool) url.Values {
	q := url.Values{}
	if on {
		q.Set(apiv1.QueryActiveOnly, "true")
	}
	return q
}

func credentialStatus(now time.Time, active bool, revoked, expires *time.Time) string {
	switch {
	case revoked != nil:
		return "revoked"
	case expires != nil && !expires.After(now):
		return "expired"
	case !active:
		return "inactive"
	}
	return "active"
}

func cmdCredentialCreate(e *env, args []string) error {
	f := e.newFlags("credential create")
	c := f.conn(true)
	tenant, cluster := tenantFlag(f), clusterFlag(f)
	auth := f.String("auth", "token", "credential type: token, cert or basic")
	expires := f.String("expires", "", "lifetime, a Go duration such as 720h (default: no expiry)")
	desc := f.String("description", "", "what the credential is for")
	webhookURL := f.String("webhook-url", "", "the gateway's webhook address as the apiservers reach it (default: the server's)")
	out := f.String("out", "", "write DIR/kubeconfig.yaml (and the other artifacts) for the new credential")
	if _, err := f.parse(args, 0, 0, ""); err != nil {
		return err
	}
	if err := required("tenant", *tenant, "cluster", *cluster); err != nil {
		return err
	}
	typ, err := authType(*auth)
	if err != nil {
		return err
	}
	if err := durationFlag("expires", *expires); err != nil {
		return err
	}
	if *out != "" {
		if err := prepareOut(*out); err != nil {
			return err
		}
	}
	cl, err := e.connect(c)
	if err != nil {
		return err
	}
	var issued apiv1.CredentialIssued
	raw, err := cl.sendJSON(e, http.MethodPost, apiPath("tenants", *tenant, "clusters", *cluster, "credentials"), nil,
		apiv1.CredentialCreate{Type: typ, Description: *desc, ExpiresIn: *expires, WebhookURL: *webhookURL}, &issued)
	if err != nil {
		return err
	}
	return e.issued(c, raw, issued, *out, "issued")
}

// issued writes and prints a new credential; its secret is shown here once.
func (e *env) issued(c *connFlags, raw []byte, issued apiv1.CredentialIssued, out, verb string) error {
	var written []string
	if out != "" {
		var err error
		if written, err = e.saveArtifacts(out, issued.Artifacts, raw); err != nil {
			return fmt.Errorf("credential %d was %s, but writing its files failed; the server's answer, with the secret and the files' contents, is printed above: %w", issued.Credential.ID, verb, err)
		}
	}
	return e.emit(c, raw, func(w io.Writer) error {
		cr := issued.Credential
		fmt.Fprintf(w, "credential %d (%s) %s", cr.ID, cr.Type, verb)
		if cr.ExpiresAt != nil {
			fmt.Fprintf(w, ", expires %s", cr.ExpiresAt.Format(time.RFC3339))
		}
		fmt.Fprintln(w)
		for _, p := range written {
			fmt.Fprintf(w, "wrote %s\n", p)
		}
		fmt.Fprintln(w, "The secret is shown this once:")
		switch {
		case issued.Token != "":
			fmt.Fprintf(w, "  token: %s\n", issued.Token)
		case issued.Password != "":
			fmt.Fprintf(w, "  username: %s\n  password: %s\n", issued.Username, issued.Password)
		case issued.KeyPEM != "":
			fmt.Fprintf(w, "%s%s", issued.CertificatePEM, issued.KeyPEM)
		case issued.CertificatePEM != "":
			fmt.Fprintf(w, "%s(the key is the one of your certificate signing request)\n", issued.CertificatePEM)
		}
		return nil
	})
}

func parseID(s string) (string, error) {
	if n, err := strconv.ParseInt(s, 10, 64); err != nil || n <= 0 {
		return "", usageErr("ID %q: want the number that the list command shows", s)
	}
	return s, nil
}

func cmdCredentialRevoke(e *env, args []string) error {
	f := e.newFlags("credential revoke")
	c := f.conn(true)
	tenant, cluster := tenantFlag(f), clusterFlag(f)
	pos, err := f.parse(args, 1, 1, "ID")
	if err != nil {
		return err
	}
	if err := required("tenant", *tenant, "cluster", *cluster); err != nil {
		return err
	}
	id, err := parseID(pos[0])
	if err != nil {
		return err
	}
	cl, err := e.connect(c)
	if err != nil {
		return err
	}
	var cr apiv1.Credential
	raw, err := cl.sendJSON(e, http.MethodDelete, apiPath("tenants", *tenant, "clusters", *cluster, "credentials", id), nil, nil, &cr)
	if err != nil {
		return err
	}
	return e.emit(c, raw, func(w io.Writer) error {
		_, err := fmt.Fprintf(w, "credential %d (%s) of cluster %q revoked\n", cr.ID, cr.Type, *cluster)
		return err
	})
}

func cmdCredentialRotate(e *env, args []string) error {
	f := e.newFlags("credential rotate")
	c := f.conn(true)
	tenant, cluster := tenantFlag(f), clusterFlag(f)
	grace := f.String("grace", "", "how long the old credential keeps working, a Go duration (default 24h; 0s revokes it now)")
	expires := f.String("expires", "", "lifetime of the new credential (default: no expiry)")
	webhookURL := f.String("webhook-url", "", "the gateway's webhook address as the apiservers reach it (default: the server's)")
	out := f.String("out", "", "write DIR/kubeconfig.yaml (and the other artifacts) for the new credential")
	pos, err := f.parse(args, 1, 1, "ID")
	if err != nil {
		return err
	}
	if err := required("tenant", *tenant, "cluster", *cluster); err != nil {
		return err
	}
	id, err := parseID(pos[0])
	if err != nil {
		return err
	}
	if err := durationFlag("grace", *grace); err != nil {
		return err
	}
	if err := durationFlag("expires", *expires); err != nil {
		return err
	}
	if *out != "" {
		if err := prepareOut(*out); err != nil {
			return err
		}
	}
	cl, err := e.connect(c)
	if err != nil {
		return err
	}
	var issued apiv1.CredentialIssued
	raw, err := cl.sendJSON(e, http.MethodPost, apiPath("tenants", *tenant, "clusters", *cluster, "credentials", id, "rotate"), nil,
		apiv1.CredentialRotate{Grace: *grace, ExpiresIn: *expires, WebhookURL: *webhookURL}, &issued)
	if err != nil {
		return err
	}
	return e.issued(c, raw, issued, *out, "issued to replace credential "+id)
}

// Namespaces.

func cmdNamespacesImport(e *env, args []string) error {
	f := e.newFlags("namespaces import")
	c := f.conn(true)
	tenant, cluster := tenantFlag(f), clusterFlag(f)
	file := f.String("f", "", "`FILE` of Namespace objects, YAML or JSON, as kubectl get namespaces -o yaml prints them; - reads stdin")
	if _, err := f.parse(args, 0, 0, ""); err != nil {
		return err
	}
	if err := required("tenant", *tenant, "cluster", *cluster, "f", *file); err != nil {
		return err
	}
	body, err := e.readInput(*file)
	if err != nil {
		return err
	}
	cl, err := e.connect(c)
	if err != nil {
		return err
	}
	raw, err := cl.do(e, request{method: http.MethodPut, path: apiPath("tenants", *tenant, "clusters", *cluster, "namespaces"),
		body: body, contentType: contentType(body)})
	if err != nil {
		return fmt.Errorf("%s: %w", displayName(*file), err)
	}
	var res apiv1.NamespaceImport
	if err := json.Unmarshal(raw, &res); err != nil {
		return fmt.Errorf("the server's answer: %w", err)
	}
	return e.emit(c, raw, func(w io.Writer) error {
		_, err := fmt.Fprintf(w, "%d namespaces imported into cluster %q\n", res.Namespaces, *cluster)
		return err
	})
}

// readInput reads a file, or stdin for "-".
func (e *env) readInput(name string) ([]byte, error) {
	if name == "-" {
		b, err := io.ReadAll(e.stdin)
		if err != nil {
			return nil, fmt.Errorf("reading stdin: %w", err)
		}
		return b, nil
	}
	b, err := os.ReadFile(name)
	if err != nil {
		return nil, exitError{exitUsage, err}
	}
	return b, nil
}

func displayName(file string) string {
	if file == "-" {
		return "<stdin>"
	}
	return file
}

func contentType(body []byte) string {
	if t := strings.TrimSpace(string(body)); strings.HasPrefix(t, "{") || strings.HasPrefix(t, "[") {
		return "application/json"
	}
	return "application/yaml"
}

// Admin API tokens.

func cmdTokenCreate(e *env, args []string) error {
	f := e.newFlags("token create")
	c := f.conn(true)
	name := f.String("name", "", "what the token is for")
	role := f.String("role", "", "operator, admin or viewer")
	tenant := f.String("tenant", "", "the tenant of an admin or viewer token")
	expires := f.String("expires", "", "lifetime, a Go duration such as 720h (default: no expiry)")
	if _, err := f.parse(args, 0, 0, ""); err != nil {
		return err
	}
	if err := required("name", *name, "role", *role); err != nil {
		return err
	}
	switch *role {
	case apiv1.RoleOperator, apiv1.RoleAdmin, apiv1.RoleViewer:
	default:
		return usageErr("--role %q: use operator, admin or viewer", *role)
	}
	if err := durationFlag("expires", *expires); err != nil {
		return err
	}
	cl, err := e.connect(c)
	if err != nil {
		return err
	}
	var issued apiv1.TokenIssued
	raw, err := cl.sendJSON(e, http.MethodPost, apiPath("tokens"), nil,
		apiv1.TokenCreate{Name: *name, Role: *role, Tenant: *tenant, ExpiresIn: *expires}, &issued)
	if err != nil {
		return err
	}
	return e.emit(c, raw, func(w io.Writer) error {
		tk := issued.Token
		scope := tk.Role
		if tk.Tenant != "" {
			scope += " of tenant " + strconv.Quote(tk.Tenant)
		}
		_, err := fmt.Fprintf(w, "token %d (%s) created; the secret is shown this once:\n%s\n", tk.ID, scope, issued.Secret)
		return err
	})
}

func cmdTokenList(e *env, args []string) error {
	f := e.newFlags("token list")
	c := f.conn(true)
	tenant := f.String("tenant", "", "only this tenant's tokens")
	active := f.Bool("active", false, "leave revoked and expired tokens out")
	if _, err := f.parse(args, 0, 0, ""); err != nil {
		return err
	}
	cl, err := e.connect(c)
	if err != nil {
		return err
	}
	q := activeOnly(*active)
	if *tenant != "" {
		q.Set("tenant", *tenant)
	}
	tokens, raw, err := listAll[apiv1.Token](e, cl, apiPath("tokens"), q)
	if err != nil {
		return err
	}
	return e.emit(c, raw, func(w io.Writer) error { return printTokens(w, e.now(), tokens) })
}

func printTokens(w io.Writer, now time.Time, tokens []apiv1.Token) error {
	t := newTable(w, "ID", "NAME", "ROLE", "TENANT", "STATUS", "CREATED BY", "EXPIRES", "LAST USED", "AGE")
	for _, x := range tokens {
		t.row(strconv.FormatInt(x.ID, 10), x.Name, x.Role, x.Tenant, credentialStatus(now, true, x.RevokedAt, x.ExpiresAt),
			x.CreatedBy, until(now, x.ExpiresAt), ago(now, x.LastUsedAt), age(now, x.CreatedAt))
	}
	return t.flush()
}

func cmdTokenRevoke(e *env, args []string) error {
	f := e.newFlags("token revoke")
	c := f.conn(true)
	pos, err := f.parse(args, 1, 1, "ID")
	if err != nil {
		return err
	}
	id, err := parseID(pos[0])
	if err != nil {
		return err
	}
	cl, err := e.connect(c)
	if err != nil {
		return err
	}
	var tk apiv1.Token
	raw, err := cl.sendJSON(e, http.MethodDelete, apiPath("tokens", id), nil, nil, &tk)
	if err != nil {
		return err
	}
	return e.emit(c, raw, func(w io.Writer) error {
		_, err := fmt.Fprintf(w, "token %d (%q) revoked\n", tk.ID, tk.Name)
		return err
	})
}

// durationFlag checks a duration flag's value; empty is not set.
func durationFlag(name, v string) error {
	if _, err := time.ParseDuration(v); v != "" && err != nil {
		return usageErr("--%s %q: want a duration such as 720h", name, v)
	}
	return nil
}
