package ui

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strings"

	"sigs.k8s.io/yaml"

	"github.com/portcullis-dev/portcullis/internal/apiv1"
	"github.com/portcullis-dev/portcullis/internal/fault"
)

// editorPage is the data of a policy page: the editor, the result of the
// last check, and the object's history.
type editorPage struct {
	Kind, Name, Namespace, Group string
	New                          bool
	YAML                         string
	History                      []apiv1.Version
	Check                        *check
	Clusters                     []apiv1.Cluster
}

// check is the result of Validate or Apply: either the results of a dry
// run, or the errors, each with the line of its field.
type check struct {
	Valid   bool
	DryRun  bool
	Results []apiv1.ApplyItem
	Error   *fault.Error
	Errors  []fieldError
}

type fieldError struct {
	Field, Message string
	Line           int
}

func (e editorPage) Href(tenant string, suffix ...string) string {
	return objectHref(tenant, e.Kind, e.Name, e.Namespace, e.Group, suffix...)
}

// ref reads the object named by a page's path and query.
func ref(r *request) editorPage {
	q := r.r.URL.Query()
	return editorPage{Kind: r.r.PathValue("kind"), Name: r.r.PathValue("name"),
		Namespace: q.Get("namespace"), Group: q.Get("group")}
}

func (s *Server) object(r *request) error {
	t, e := r.tenant(), ref(r)
	var raw json.RawMessage
	if err := r.api("GET", p("tenants", t, "objects", e.Kind, e.Name), objectQuery(e.Namespace, e.Group), nil, &raw); err != nil {
		return err
	}
	y, err := yaml.JSONToYAML(raw)
	if err != nil {
		return err
	}
	e.YAML = string(y)
	if err := s.loadHistory(r, &e); err != nil {
		return err
	}
	return r.page("policy", r.view(e.Kind+" "+e.Name, "policies", e))
}

func (s *Server) loadHistory(r *request, e *editorPage) error {
	q := objectQuery(e.Namespace, e.Group)
	q.Set("limit", "100")
	var h list[apiv1.Version]
	if err := r.api("GET", p("tenants", r.tenant(), "objects", e.Kind, e.Name, "history"), q, nil, &h); err != nil {
		return err
	}
	e.History = h.Items
	return nil
}

const newPolicyTemplate = `apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata:
  name: my-policy
spec:
  failurePolicy: Fail
  matchConstraints:
    resourceRules:
    - apiGroups: [""]
      apiVersions: ["v1"]
      operations: ["CREATE", "UPDATE"]
      resources: ["pods"]
  validations:
  - expression: "object.metadata.name.size() <= 63"
    message: "the name is too long"
`

func (s *Server) newPolicy(r *request) error {
	return r.page("policy", r.view("New policy", "policies", editorPage{New: true, YAML: newPolicyTemplate}))
}

// dryRun sends the editor's text to the API's apply and turns the answer
// into a check.
func (s *Server) checkText(r *request, text string, dryRun bool) (*check, error) {
	q := url.Values{}
	if dryRun {
		q.Set("dryRun", "true")
	}
	var res apiv1.ApplyResult
	err := r.api("POST", p("tenants", r.tenant(), "apply"), q, []byte(text), &res)
	if err == nil {
		return &check{Valid: true, DryRun: dryRun, Results: res.Results}, nil
	}
	// Refusals of the text are shown at the editor; any other error (not
	// found, forbidden) is the page's.
	e := asAPIError(err)
	if e == nil {
		return nil, err
	}
	switch e.Code {
	case fault.BadRequest, fault.AlreadyExists, fault.Conflict, fault.Invalid:
	default:
		return nil, err
	}
	c := &check{Error: e}
	for _, cs := range e.Causes {
		c.Errors = append(c.Errors, fieldError{Field: cs.Field, Message: cs.Message, Line: fieldLine([]byte(text), cs.Field)})
	}
	return c, nil
}

// editorFromForm is the page as posted: the text and which object it was.
func editorFromForm(r *request) editorPage {
	f := r.r.PostForm
	return editorPage{Kind: f.Get("kind"), Name: f.Get("name"), Namespace: f.Get("namespace"), Group: f.Get("group"),
		New: f.Get("kind") == "", YAML: strings.ReplaceAll(f.Get("yaml"), "\r\n", "\n")}
}

func (s *Server) validate(r *request) error {
	e := editorFromForm(r)
	c, err := s.checkText(r, e.YAML, true)
	if err != nil {
		return err
	}
	e.Check = c
	v := r.view("Validate", "policies", e)
	if r.htmx() {
		return r.fragment("policy", "check", v)
	}
	return s.reshow(r, e, http.StatusOK)
}

// reshow renders the editor again with the posted text and its check.
func (s *Server) reshow(r *request, e editorPage, code int) error {
	title := "New policy"
	if !e.New {
		title = e.Kind + " " + e.Name
		if err := s.loadHistory(r, &e); err != nil {
			return err
		}
	}
	return s.pages.render(r.w, code, "policy", "layout", r.view(title, "policies", e))
}

func (s *Server) apply(r *request) error {
	e := editorFromForm(r)
	c, err := s.checkText(r, e.YAML, false)
	if err != nil {
		return err
	}
	if !c.Valid {
		e.Check = c
		return s.reshow(r, e, http.StatusUnprocessableEntity)
	}
	var msgs []string
	for _, it := range c.Results {
		msgs = append(msgs, it.Kind+" "+it.Name+" "+it.Action+", version "+itoa(it.ResourceVersion))
	}
	to := "/ui/t/" + url.PathEscape(r.tenant()) + "/policies"
	switch {
	case !e.New:
		// Back to the page the text was edited on.
		to = e.Href(r.tenant())
	case len(c.Results) == 1:
		it := c.Results[0]
		to = objectHref(r.tenant(), it.Kind, it.Name, it.Namespace, groupOf(it.APIVersion))
	}
	return r.redirect(to, strings.Join(msgs, "; ")+".")
}
