package ui

import (
	"encoding/json"
	"strconv"
	"strings"

	"github.com/pmezard/go-difflib/difflib"
	"sigs.k8s.io/yaml"

	"github.com/portcullis-dev/portcullis/internal/apiv1"
)

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// diffRow is one line of a side-by-side diff; a side with no line is
// empty (Left or Right nil).
type diffRow struct {
	Op      string // equal, replace, delete, insert
	LeftNo  int
	Left    *string
	RightNo int
	Right   *string
}

func (s *Server) versionYAML(r *request, e editorPage, v string) ([]string, error) {
	var ver apiv1.Version
	if err := r.api("GET", p("tenants", r.tenant(), "objects", e.Kind, e.Name, "versions", v),
		objectQuery(e.Namespace, e.Group), nil, &ver); err != nil {
		return nil, err
	}
	if len(ver.Object) == 0 {
		return nil, nil // a deletion
	}
	var obj map[string]any
	if err := json.Unmarshal(ver.Object, &obj); err != nil {
		return nil, err
	}
	y, err := yaml.Marshal(obj)
	if err != nil {
		return nil, err
	}
	return strings.SplitAfter(strings.TrimSuffix(string(y), "\n"), "\n"), nil
}

func (s *Server) diff(r *request) error {
	e := ref(r)
	q := r.r.URL.Query()
	from, to := q.Get("from"), q.Get("to")
	for _, v := range []string{from, to} {
		if _, err := strconv.ParseInt(v, 10, 64); err != nil {
			return badRequest("choose two versions to compare (from and to), not %q", v)
		}
	}
	a, err := s.versionYAML(r, e, from)
	if err != nil {
		return err
	}
	b, err := s.versionYAML(r, e, to)
	if err != nil {
		return err
	}
	var rows []diffRow
	for _, op := range difflib.NewMatcher(a, b).GetOpCodes() {
		n := max(op.I2-op.I1, op.J2-op.J1)
		for k := 0; k < n; k++ {
			row := diffRow{Op: map[byte]string{'e': "equal", 'r': "replace", 'd': "delete", 'i': "insert"}[op.Tag]}
			if i := op.I1 + k; i < op.I2 {
				l := strings.TrimSuffix(a[i], "\n")
				row.LeftNo, row.Left = i+1, &l
			}
			if j := op.J1 + k; j < op.J2 {
				l := strings.TrimSuffix(b[j], "\n")
				row.RightNo, row.Right = j+1, &l
			}
			rows = append(rows, row)
		}
	}
	return r.page("diff", r.view("Diff of "+e.Name+": version "+from+" and "+to, "policies",
		map[string]any{"Object": e, "From": from, "To": to, "Rows": rows}))
}

func (s *Server) rollback(r *request) error {
	e := ref(r)
	v, err := strconv.ParseInt(r.r.PostFormValue("version"), 10, 64)
	if err != nil {
		return badRequest("choose the version to roll back to")
	}
	if ok, err := r.confirmed("Roll "+e.Name+" back to version "+itoa(v)+"? This writes a new version equal to it.",
		"Roll back", e.Href(r.tenant())); !ok {
		return err
	}
	var out apiv1.ApplyItem
	if err := r.api("POST", p("tenants", r.tenant(), "objects", e.Kind, e.Name, "rollback"), objectQuery(e.Namespace, e.Group),
		apiv1.Rollback{ToVersion: v}, &out); err != nil {
		return err
	}
	return r.redirect(e.Href(r.tenant()), e.Kind+" "+e.Name+" rolled back to version "+itoa(v)+": now version "+itoa(out.ResourceVersion)+".")
}
