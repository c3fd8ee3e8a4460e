package cli

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"

	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"
)

// document is one object read from the files of -f, with where it came
// from, so that the server's errors about documents[i] can name the file.
type document struct {
	file  string
	index int // 1-based, within the file
	item  int // 0-based index in a List document; -1 when not from a List
	json  []byte
	meta  objectMeta
}

// objectMeta is what the CLI needs of an object to address it.
type objectMeta struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Metadata   struct {
		Name      string `json:"name"`
		Namespace string `json:"namespace"`
	} `json:"metadata"`
}

func (d document) where() string {
	s := fmt.Sprintf("%s, document %d", displayName(d.file), d.index)
	if d.item >= 0 {
		s += fmt.Sprintf(", items[%d]", d.item)
	}
	return s
}

func (m objectMeta) group() string { return groupOf(m.APIVersion) }

// groupOf is the group of an apiVersion, "" for the core group.
func groupOf(apiVersion string) string {
	if g, _, ok := strings.Cut(apiVersion, "/"); ok {
		return g
	}
	return ""
}

// ref is the object as kubectl names it: validatingadmissionpolicy.admissionregistration.k8s.io/name.
func ref(apiVersion, kind, name string) string {
	t := strings.ToLower(kind)
	if g := groupOf(apiVersion); g != "" {
		t += "." + g
	}
	return t + "/" + name
}

// expandPaths turns -f arguments into files: a directory stands for its
// *.yaml, *.yml and *.json files, sorted by name.
func expandPaths(paths []string) ([]string, error) {
	var files []string
	for _, p := range paths {
		if p == "-" {
			files = append(files, p)
			continue
		}
		st, err := os.Stat(p)
		if err != nil {
			return nil, exitError{exitUsage, err}
		}
		if !st.IsDir() {
			files = append(files, p)
			continue
		}
		entries, err := os.ReadDir(p)
		if err != nil {
			return nil, exitError{exitUsage, err}
		}
		var in []string
		for _, en := range entries {
			switch strings.ToLower(filepath.Ext(en.Name())) {
			case ".yaml", ".yml", ".json":
				if !en.IsDir() {
					in = append(in, filepath.Join(p, en.Name()))
				}
			}
		}
		if len(in) == 0 {
			return nil, usageErr("%s has no *.yaml, *.yml or *.json file", p)
		}
		sort.Strings(in)
		files = append(files, in...)
	}
	return files, nil
}

// readDocuments reads every object of the files; a List (kind List or
// any *List with items) stands for its items.
func (e *env) readDocuments(paths []string) ([]document, error) {
	files, err := expandPaths(paths)
	if err != nil {
		return nil, err
	}
	stdinUsed := false
	var docs []document
	for _, file := range files {
		if file == "-" {
			if stdinUsed {
				return nil, usageErr("-f - given twice")
			}
			stdinUsed = true
		}
		b, err := e.readInput(file)
		if err != nil {
			return nil, err
		}
		ds, err := splitDocuments(file, b)
		if err != nil {
			return nil, err
		}
		docs = append(docs, ds...)
	}
	return docs, nil
}

func splitDocuments(file string, b []byte) ([]document, error) {
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(b)))
	var docs []document
	for n := 1; ; n++ {
		chunk, err := r.Read()
		if errors.Is(err, io.EOF) {
			return docs, nil
		}
		at := document{file: file, index: n, item: -1}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", at.where(), err)
		}
		// Strict: a key given twice (validationActions: [Deny], then
		// [Audit]) is an error, not the last one silently kept.
		j, err := yaml.YAMLToJSONStrict(chunk)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", at.where(), err)
		}
		if t := bytes.TrimSpace(j); len(t) == 0 || string(t) == "null" {
			// A document of comments only is skipped, as kubectl does,
			// but keeps its number.
			continue
		}
		var obj map[string]json.RawMessage
		if err := json.Unmarshal(j, &obj); err != nil {
			return nil, fmt.Errorf("%s: not an object", at.where())
		}
		var kind string
		_ = json.Unmarshal(obj["kind"], &kind)
		if items, ok := obj["items"]; ok && strings.HasSuffix(kind, "List") {
			var list []json.RawMessage
			if err := json.Unmarshal(items, &list); err != nil {
				return nil, fmt.Errorf("%s, field items: not a list", at.where())
			}
			for i, it := range list {
				d := document{file: file, index: n, item: i, json: it}
				if err := checkObject(&d); err != nil {
					return nil, err
				}
				docs = append(docs, d)
			}
			continue
		}
		at.json = j
		if err := checkObject(&at); err != nil {
			return nil, err
		}
		docs = append(docs, at)
	}
}

// checkObject reads the fields that address an object, so that a file
// without them is refused here, naming the file. Anything else is the
// server's to judge.
func checkObject(d *document) error {
	var obj map[string]any
	if err := json.Unmarshal(d.json, &obj); err != nil || obj == nil {
		return fmt.Errorf("%s: not an object", d.where())
	}
	str := func(v any, field string) (string, error) {
		s, ok := v.(string)
		if v != nil && !ok {
			return "", fmt.Errorf("%s, field %s: must be a string, not %v", d.where(), field, v)
		}
		return s, nil
	}
	var err error
	if d.meta.APIVersion, err = str(obj["apiVersion"], "apiVersion"); err != nil {
		return err
	}
	if d.meta.Kind, err = str(obj["kind"], "kind"); err != nil {
		return err
	}
	if md, ok := obj["metadata"].(map[string]any); ok {
		// A name that is not a string (YAML reads `name: y` as true) is
		// left for the server, which names the field.
		d.meta.Metadata.Name, _ = md["name"].(string)
		d.meta.Metadata.Namespace, _ = md["namespace"].(string)
	}
	switch {
	case d.meta.APIVersion == "":
		return fmt.Errorf("%s, field apiVersion: required", d.where())
	case d.meta.Kind == "":
		return fmt.Errorf("%s, field kind: required", d.where())
	}
	return nil
}

// applyBody is the apply body: a JSON array with one element per object,
// so that the server's documents[i] is docs[i].
func applyBody(docs []document) []byte {
	var b bytes.Buffer
	b.WriteByte('[')
	for i, d := range docs {
		if i > 0 {
			b.WriteString(",\n")
		}
		b.Write(d.json)
	}
	b.WriteString("]\n")
	return b.Bytes()
}

// documentNamer rewrites LIST[i].field (documents[i] in an apply,
// objects[i] in an evaluation) as FILE, document N, field FIELD.
func documentNamer(docs []document, list string) func(string) string {
	ref := regexp.MustCompile(`\b` + regexp.QuoteMeta(list) + `\[(\d+)\](?:\.([^\s:,]+))?`)
	return func(s string) string {
		return ref.ReplaceAllStringFunc(s, func(m string) string {
			sub := ref.FindStringSubmatch(m)
			i, err := strconv.Atoi(sub[1])
			if err != nil || i < 0 || i >= len(docs) {
				return m
			}
			out := docs[i].where()
			if sub[2] != "" {
				out += ", field " + sub[2]
			}
			return out
		})
	}
}

// nameDocuments makes a Status about LIST[i] name the files.
func nameDocuments(err error, docs []document, list string) error {
	var se *statusError
	if errors.As(err, &se) {
		se.where = documentNamer(docs, list)
	}
	return err
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
