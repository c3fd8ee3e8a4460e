package cli

import (
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/portcullis-dev/portcullis/internal/apiv1"
)

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
	is := f.issue("lifetime, a Go duration such as 720h (default: no expiry)")
	auth := f.String("auth", "token", "credential type: token, cert, basic or url")
	desc := f.String("description", "", "what the credential is for")
	if _, err := f.parse(args, 0, 0, ""); err != nil {
		return err
	}
	if err := required("tenant", *is.tenant, "cluster", *is.cluster); err != nil {
		return err
	}
	typ, err := authType(*auth)
	if err != nil {
		return err
	}
	return e.issue(is, apiv1.CredentialCreate{Type: typ, Description: *desc, ExpiresIn: *is.expires, WebhookURL: *is.webhookURL}, "issued")
}

// issueFlags are the flags of the two commands that issue a credential,
// credential create and credential rotate.
type issueFlags struct {
	conn                                      *connFlags
	tenant, cluster, expires, webhookURL, out *string
}

// issue adds the flags of a command that issues a credential;
// expiresUsage says whose lifetime --expires sets.
func (f *flags) issue(expiresUsage string) issueFlags {
	return issueFlags{
		conn:       f.conn(true),
		tenant:     tenantFlag(f),
		cluster:    clusterFlag(f),
		expires:    f.String("expires", "", expiresUsage),
		webhookURL: f.String("webhook-url", "", "the gateway's webhook address as the apiservers reach it (default: the server's)"),
		out:        f.String("out", "", "write DIR/kubeconfig.yaml (and the other artifacts) for the new credential"),
	}
}

// issue is the body of credential create and rotate, once each has checked
// its own flags: it checks --expires and, before the server is asked for a
// secret it shows only once, that --out can be written; then it POSTs body
// to the cluster's credentials (or to the path under them that sub names)
// and writes and prints what was issued.
func (e *env) issue(is issueFlags, body any, verb string, sub ...string) error {
	if err := durationFlag("expires", *is.expires); err != nil {
		return err
	}
	if *is.out != "" {
		if err := prepareOut(*is.out); err != nil {
			return err
		}
	}
	cl, err := e.connect(is.conn)
	if err != nil {
		return err
	}
	path := apiPath(append([]string{"tenants", *is.tenant, "clusters", *is.cluster, "credentials"}, sub...)...)
	var issued apiv1.CredentialIssued
	raw, err := cl.sendJSON(e, http.MethodPost, path, nil, body, &issued)
	if err != nil {
		return namingFlags(err, map[string]string{"webhookURL": "--webhook-url", "expiresIn": "--expires", "grace": "--grace"})
	}
	return e.issued(is.conn, raw, issued, *is.out, verb)
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
	if issued.URLSecret != "" {
		e.warnURLSecret()
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
		case issued.URLSecret != "":
			fmt.Fprintf(w, "  url secret: %s (in the webhook URLs: /t/<tenant>/k/<secret>/validate and /mutate)\n", issued.URLSecret)
		case issued.KeyPEM != "":
			fmt.Fprintf(w, "%s%s", issued.CertificatePEM, issued.KeyPEM)
		case issued.CertificatePEM != "":
			fmt.Fprintf(w, "%s(the key is the one of your certificate signing request)\n", issued.CertificatePEM)
		}
		return nil
	})
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
	is := f.issue("lifetime of the new credential (default: no expiry)")
	grace := f.String("grace", "", "how long the old credential keeps working, a Go duration (default 24h; 0s revokes it now)")
	pos, err := f.parse(args, 1, 1, "ID")
	if err != nil {
		return err
	}
	if err := required("tenant", *is.tenant, "cluster", *is.cluster); err != nil {
		return err
	}
	id, err := parseID(pos[0])
	if err != nil {
		return err
	}
	if err := durationFlag("grace", *grace); err != nil {
		return err
	}
	return e.issue(is, apiv1.CredentialRotate{Grace: *grace, ExpiresIn: *is.expires, WebhookURL: *is.webhookURL},
		"issued to replace credential "+id, id, "rotate")
}
