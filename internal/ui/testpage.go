package ui

import (
	"encoding/json"
	"io"
	"net/url"
	"regexp"
	"strings"

	"sigs.k8s.io/yaml"

	"github.com/portcullis-dev/portcullis/internal/apiv1"
	"github.com/portcullis-dev/portcullis/internal/fault"
)

// testForm is the Test page's form and, once run, its result.
type testForm struct {
	Clusters []apiv1.Cluster
	Cluster  string
	Review   string
	Objects  string
	Mutate   bool
	Result   *testResult
	// FromDecision names the recorded decision the review was rebuilt
	// from. Recent are the tenant's newest decisions, to pick one from.
	FromDecision string
	Recent       []apiv1.Decision
}

type testResult struct {
	Allowed  bool
	Message  string
	Warnings []string
	Patch    string
	Trace    []apiv1.BindingTrace
	Version  int64
	// Candidate is set when unsaved objects were laid over the stored ones.
	Candidate bool
}

func (s *Server) testClusters(r *request) ([]apiv1.Cluster, error) {
	var cs list[apiv1.Cluster]
	err := r.api("GET", p("tenants", r.tenant(), "clusters"), url.Values{"limit": {"1000"}}, nil, &cs)
	return cs.Items, err
}

func (s *Server) testPage(r *request) error {
	cs, err := s.testClusters(r)
	if err != nil {
		return err
	}
	form := &testForm{Clusters: cs}
	var recent apiv1.DecisionList
	if err := r.api("GET", p("tenants", r.tenant(), "decisions"), url.Values{"limit": {"10"}}, nil, &recent); err != nil {
		return err
	}
	form.Recent = recent.Items
	if id := r.r.URL.Query().Get("decision"); id != "" {
		d, err := findDecision(r, id, r.r.URL.Query().Get("at"))
		if err != nil {
			return err
		}
		form.Review, form.Cluster, form.Mutate, form.FromDecision = rebuildReview(d), d.Cluster, d.Endpoint == "mutate", d.ID
	}
	return r.page("test", r.view("Test", "test", form))
}

// rebuildReview is the AdmissionReview of a recorded decision, as far as
// it was recorded: the request's metadata and user, but not the object,
// which decisions do not keep; the page asks for it.
func rebuildReview(d apiv1.Decision) string {
	obj := map[string]any{"apiVersion": strings.TrimPrefix(d.Group+"/"+d.Version, "/"), "kind": d.Kind,
		"metadata": map[string]any{"name": d.Name, "namespace": d.Namespace}}
	req := map[string]any{
		"uid":       d.UID,
		"kind":      map[string]string{"group": d.Group, "version": d.Version, "kind": d.Kind},
		"resource":  map[string]string{"group": d.Group, "version": d.Version, "resource": d.Resource},
		"namespace": d.Namespace, "name": d.Name, "operation": d.Operation, "dryRun": d.DryRun,
		"userInfo": map[string]any{"username": d.UserName, "groups": d.UserGroups},
	}
	if d.SubResource != "" {
		req["subResource"] = d.SubResource
	}
	if d.Operation != "DELETE" {
		req["object"] = obj
	}
	if d.Operation == "UPDATE" || d.Operation == "DELETE" {
		req["oldObject"] = obj
	}
	b, _ := json.MarshalIndent(map[string]any{"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": req}, "", "  ")
	return string(b)
}

var docSep = regexp.MustCompile(`(?m)^---[ \t]*$`)

// yamlObjects turns a YAML stream into JSON objects, one per document.
func yamlObjects(text string) ([]json.RawMessage, error) {
	var out []json.RawMessage
	for i, doc := range docSep.Split(text, -1) {
		if strings.TrimSpace(doc) == "" {
			continue
		}
		j, err := yaml.YAMLToJSON([]byte(doc))
		if err != nil {
			return nil, badRequest("objects: document %d is not valid YAML: %v", i+1, err)
		}
		if string(j) == "null" {
			continue
		}
		out = append(out, j)
	}
	return out, nil
}

func (s *Server) runTest(r *request) error {
	cs, err := s.testClusters(r)
	if err != nil {
		return err
	}
	f := r.r.PostForm
	form := &testForm{Clusters: cs, Cluster: f.Get("cluster"), Review: f.Get("review"), Objects: f.Get("objects"),
		Mutate: f.Get("mutate") != ""}
	if f.Get("candidate") != "" {
		// From a policy page: its unsaved text becomes the candidate.
		form.Objects = f.Get("yaml")
	}
	if file, _, err := r.r.FormFile("file"); err == nil {
		b, err := io.ReadAll(io.LimitReader(file, 8<<20))
		_ = file.Close()
		if err != nil {
			return err
		}
		if len(strings.TrimSpace(string(b))) > 0 {
			form.Review = string(b)
		}
	}
	v := r.view("Test", "test", form)
	if strings.TrimSpace(form.Review) == "" || form.Cluster == "" {
		if f.Get("candidate") == "" {
			v.Error = &fault.Error{Code: fault.BadRequest, Message: "Paste or upload an AdmissionReview and choose a cluster."}
		}
		return r.page("test", v)
	}
	review, err := yaml.YAMLToJSON([]byte(form.Review))
	if err != nil {
		v.Error = &fault.Error{Code: fault.BadRequest, Message: "The AdmissionReview is not valid JSON or YAML: " + err.Error()}
		return r.page("test", v)
	}
	in := apiv1.EvaluateRequest{Review: review, Mutate: form.Mutate}
	if strings.TrimSpace(form.Objects) != "" {
		if in.Objects, err = yamlObjects(form.Objects); err != nil {
			return err
		}
	}
	var out apiv1.EvaluateResponse
	if err := r.api("POST", p("tenants", r.tenant(), "clusters", form.Cluster, "evaluate"), nil, in, &out); err != nil {
		if v.Error = asAPIError(err); v.Error == nil {
			return err
		}
	} else {
		form.Result = toResult(out)
	}
	if r.htmx() {
		return r.fragment("test", "result", v)
	}
	return r.page("test", v)
}

func toResult(out apiv1.EvaluateResponse) *testResult {
	var rv struct {
		Response struct {
			Allowed bool `json:"allowed"`
			Status  *struct {
				Message string `json:"message"`
			} `json:"status"`
			Warnings []string `json:"warnings"`
			Patch    []byte   `json:"patch"`
		} `json:"response"`
	}
	_ = json.Unmarshal(out.Review, &rv)
	res := &testResult{Allowed: rv.Response.Allowed, Warnings: rv.Response.Warnings, Trace: out.Trace,
		Version: out.SnapshotVersion, Candidate: out.Candidate, Patch: string(rv.Response.Patch)}
	if rv.Response.Status != nil {
		res.Message = rv.Response.Status.Message
	}
	return res
}
