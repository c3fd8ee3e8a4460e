package ui

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/portcullis-dev/portcullis/internal/apiclient"
	"github.com/portcullis-dev/portcullis/internal/apiv1"
	"github.com/portcullis-dev/portcullis/internal/fault"
)

// issued is the one answer that holds a new credential's secret. It stays
// in the server-side session so that its kubeconfig can be downloaded, and
// is replaced by the next one.
type issued struct {
	Tenant, Cluster string
	Credential      apiv1.CredentialIssued
}

// artifactFiles are the files of onboarding, named as `admin cluster
// create --out` names them.
var artifactFiles = []string{"kubeconfig.yaml", "admission-configuration.yaml", "webhooks.yaml"}

func (s *Server) newCluster(r *request) error {
	return r.page("cluster_new", r.view("Add cluster", "clusters", nil))
}

func parseLabels(s string) (map[string]string, error) {
	out := map[string]string{}
	for _, kv := range strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == '\n' }) {
		k, v, ok := strings.Cut(strings.TrimSpace(kv), "=")
		if !ok || k == "" {
			return nil, badRequest("labels: %q is not key=value", strings.TrimSpace(kv))
		}
		out[strings.TrimSpace(k)] = strings.TrimSpace(v)
	}
	return out, nil
}

func (s *Server) createCluster(r *request) error {
	t := r.tenant()
	labels, err := parseLabels(r.r.PostFormValue("labels"))
	if err != nil {
		return err
	}
	in := apiv1.ClusterCreate{Name: r.r.PostFormValue("name"), Labels: labels,
		Credential: &apiv1.CredentialCreate{Type: r.r.PostFormValue("auth"), Description: "created in the web UI",
			WebhookURL: r.r.PostFormValue("webhookURL")}}
	var out apiv1.ClusterCreated
	if err := r.api("POST", p("tenants", t, "clusters"), nil, in, &out); err != nil {
		v := r.view("Add cluster", "clusters", in)
		v.Error = asAPIError(err)
		if v.Error == nil {
			return err
		}
		return r.s.pages.render(r.w, v.Error.Code.HTTPStatus(), "cluster_new", "layout", v)
	}
	if out.Credential == nil {
		return fmt.Errorf("cluster created without a credential")
	}
	return s.showIssued(r, t, out.Cluster.Name, *out.Credential)
}

// showIssued shows a new credential's onboarding steps and files, once.
func (s *Server) showIssued(r *request, t, cluster string, c apiv1.CredentialIssued) error {
	if err := s.sessions.setIssued(r.r.Context(), r.sess, &issued{Tenant: t, Cluster: cluster, Credential: c}); err != nil {
		return err
	}
	r.w.Header().Set("Cache-Control", "no-store")
	return r.page("onboarding", r.view("Onboard cluster "+cluster, "clusters", map[string]any{
		"Cluster": cluster, "Issued": c, "Files": artifactFiles}))
}

// downloadArtifact serves one onboarding file. The kubeconfig holds a
// secret and comes only from this session's last issued credential; the
// other two are the cluster's and may be fetched at any time.
func (s *Server) downloadArtifact(r *request) error {
	t, cluster, file := r.tenant(), r.r.PathValue("cluster"), r.r.PathValue("file")
	var body string
	switch file {
	case "kubeconfig.yaml":
		is := s.sessions.getIssued(r.sess)
		if is == nil || is.Tenant != t || is.Cluster != cluster || is.Credential.Artifacts.Kubeconfig == "" {
			return notFound("no kubeconfig to download: it is shown only right after a credential is issued; issue a new credential")
		}
		body = is.Credential.Artifacts.Kubeconfig
	case "admission-configuration.yaml", "webhooks.yaml":
		var a apiv1.Artifacts
		if err := r.api("GET", p("tenants", t, "clusters", cluster, "artifacts"), nil, nil, &a); err != nil {
			return err
		}
		body = a.AdmissionConfiguration
		if file == "webhooks.yaml" {
			body = a.Webhooks
		}
	default:
		return notFound("no file %q; the files are %s", file, strings.Join(artifactFiles, ", "))
	}
	h := r.w.Header()
	h.Set("Content-Type", "application/yaml")
	h.Set("Content-Disposition", `attachment; filename="`+file+`"`)
	h.Set("Cache-Control", "no-store")
	_, err := r.w.Write([]byte(body))
	return err
}

func (s *Server) addCredential(r *request) error {
	t, cluster := r.tenant(), r.r.PathValue("cluster")
	in := apiv1.CredentialCreate{Type: r.r.PostFormValue("auth"), Description: r.r.PostFormValue("description"),
		ExpiresIn: r.r.PostFormValue("expiresIn")}
	var out apiv1.CredentialIssued
	if err := r.api("POST", p("tenants", t, "clusters", cluster, "credentials"), nil, in, &out); err != nil {
		return err
	}
	return s.showIssued(r, t, cluster, out)
}

func credentialID(r *request) (string, error) {
	id := r.r.PathValue("id")
	if _, err := strconv.ParseInt(id, 10, 64); err != nil {
		return "", notFound("no credential %q", id)
	}
	return id, nil
}

func (s *Server) revokeCredential(r *request) error {
	t, cluster := r.tenant(), r.r.PathValue("cluster")
	id, err := credentialID(r)
	if err != nil {
		return err
	}
	back := "/ui/t/" + url.PathEscape(t) + "/clusters"
	if ok, err := r.confirmed("Revoke credential "+id+" of cluster "+cluster+"? Apiservers using it are refused at once.",
		"Revoke", back); !ok {
		return err
	}
	if err := r.api("DELETE", p("tenants", t, "clusters", cluster, "credentials", id), nil, nil, nil); err != nil {
		return err
	}
	return r.redirect(back, "Credential "+id+" of cluster "+cluster+" revoked.")
}

func (s *Server) rotateCredential(r *request) error {
	t, cluster := r.tenant(), r.r.PathValue("cluster")
	id, err := credentialID(r)
	if err != nil {
		return err
	}
	if ok, err := r.confirmed("Rotate credential "+id+" of cluster "+cluster+"? A new credential is issued; the old one stops working after 24 hours.",
		"Rotate", "/ui/t/"+url.PathEscape(t)+"/clusters"); !ok {
		return err
	}
	in := apiv1.CredentialRotate{Grace: r.r.PostFormValue("grace")}
	var out apiv1.CredentialIssued
	if err := r.api("POST", p("tenants", t, "clusters", cluster, "credentials", id, "rotate"), nil, in, &out); err != nil {
		return err
	}
	return s.showIssued(r, t, cluster, out)
}

// asAPIError is the API's refusal of a request that the page shows in
// place (a bad field, a name taken): a 4xx other than 401, which ends the
// session instead; nil for anything else.
func asAPIError(err error) *fault.Error {
	var ae *apiclient.Error
	if errors.As(err, &ae) && ae.Fault().Code.HTTPStatus() < http.StatusInternalServerError && ae.Fault().Code != fault.Unauthenticated {
		return ae.Fault()
	}
	return nil
}
