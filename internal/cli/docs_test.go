package cli

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestDocuments(t *testing.T) {
	dir := t.TempDir()
	write := func(name, s string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("b.yaml", "# a comment only\n---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: one}\n---\n---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: two, namespace: ns}\n")
	write("a.json", `{"apiVersion": "v1", "kind": "List", "items": [{"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s"}}]}`)
	write("notes.txt", "ignored")
	docs, err := (&env{}).readDocuments([]string{dir})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, d := range docs {
		got = append(got, d.where()+" "+d.meta.Kind+"/"+d.meta.Metadata.Name)
	}
	want := []string{
		filepath.Join(dir, "a.json") + ", document 1, items[0] Secret/s",
		filepath.Join(dir, "b.yaml") + ", document 2 ConfigMap/one",
		filepath.Join(dir, "b.yaml") + ", document 3 ConfigMap/two",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("documents:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	// The body has one document per object, in that order.
	var body []map[string]any
	if err := json.Unmarshal(applyBody(docs), &body); err != nil || len(body) != 3 || body[2]["metadata"].(map[string]any)["name"] != "two" {
		t.Fatalf("body %v %v", body, err)
	}

	// The server's documents[i] becomes the file and document.
	se := apiAnswer(422, "Invalid", "documents[2].spec.policyName: Required value",
		metav1.StatusCause{Field: "documents[2].spec.policyName", Message: "Required value"})
	err = nameDocuments(se, docs, "documents")
	wantErr := filepath.Join(dir, "b.yaml") + ", document 3, field spec.policyName: Required value (Invalid, HTTP 422)"
	if err.Error() != wantErr {
		t.Fatalf("error %q\nwant  %q", err, wantErr)
	}
	se.api.Status.Message = `1 of the 3 documents is invalid; nothing was written: ConfigMap "two" documents[2].spec.policyName: Required value`
	wantErr = "1 of the 3 documents is invalid; nothing was written (Invalid, HTTP 422)\n  " + filepath.Join(dir, "b.yaml") + ", document 3, field spec.policyName: Required value"
	if err.Error() != wantErr {
		t.Fatalf("error %q\nwant  %q", err, wantErr)
	}
	se.api.Status.Message = "2 documents are invalid"
	se.api.Status.Details.Causes = append(se.api.Status.Details.Causes, metav1.StatusCause{Field: "documents[0]", Message: "unknown kind"})
	wantErr = "2 documents are invalid (Invalid, HTTP 422)\n  " + filepath.Join(dir, "b.yaml") + ", document 3, field spec.policyName: Required value\n  " +
		filepath.Join(dir, "a.json") + ", document 1, items[0]: unknown kind"
	if err.Error() != wantErr {
		t.Fatalf("error %q\nwant  %q", err, wantErr)
	}
	// admin test --with: the server names the candidates objects[i].
	se = apiAnswer(422, "Invalid", "objects[1].spec.validations[0].expression: compilation failed")
	wantErr = filepath.Join(dir, "b.yaml") + ", document 2, field spec.validations[0].expression: compilation failed (Invalid, HTTP 422)"
	if err := nameDocuments(se, docs, "objects"); err.Error() != wantErr {
		t.Fatalf("error %q\nwant  %q", err, wantErr)
	}

	// Bad files are refused before anything is sent, naming the file.
	for name, content := range map[string]string{
		"nokind.yaml": "apiVersion: v1\nmetadata: {name: x}\n",
		"bad.yaml":    "apiVersion: v1\nkind: [\n",
		"scalar.yaml": "just a string\n",
		"number.yaml": "apiVersion: 1\nkind: ConfigMap\n",
		// A key given twice is an error, not the last one kept.
		"duplicate.yaml": "apiVersion: admissionregistration.k8s.io/v1\nkind: ValidatingAdmissionPolicyBinding\n" +
			"metadata: {name: b}\nspec:\n  policyName: p\n  validationActions: [Deny]\n  validationActions: [Audit]\n",
	} {
		p := filepath.Join(t.TempDir(), name)
		os.WriteFile(p, []byte(content), 0o644)
		if _, err := (&env{}).readDocuments([]string{p}); err == nil || !strings.Contains(err.Error(), p+", document 1") {
			t.Errorf("%s: %v", name, err)
		}
	}
	// YAML reads `name: y` as true: the server judges it, naming the field.
	p := writeTemp(t, "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: y}\n")
	if docs, err := (&env{}).readDocuments([]string{p}); err != nil || len(docs) != 1 || docs[0].meta.Kind != "ConfigMap" {
		t.Errorf("a name that is not a string: %v", err)
	}
	if _, err := (&env{}).readDocuments([]string{t.TempDir()}); err == nil || !strings.Contains(err.Error(), "has no *.yaml") {
		t.Errorf("empty directory: %v", err)
	}
	// - is stdin, once.
	in := &env{stdin: strings.NewReader("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: from-stdin}\n")}
	if docs, err := in.readDocuments([]string{"-"}); err != nil || len(docs) != 1 || docs[0].where() != "<stdin>, document 1" {
		t.Errorf("stdin: %v %+v", err, docs)
	}
	if _, err := in.readDocuments([]string{"-", "-"}); err == nil || !strings.Contains(err.Error(), "-f - given twice") {
		t.Errorf("stdin twice: %v", err)
	}
	var ee exitError
	if _, err := (&env{}).readDocuments([]string{"/nonexistent"}); !errors.As(err, &ee) || ee.code != exitUsage {
		t.Errorf("missing file: %v", err)
	}
}

func writeTemp(t *testing.T, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "doc.yaml")
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}
