package catalog

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"k8s.io/apimachinery/pkg/labels"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"

	"github.com/portcullis-dev/portcullis/internal/fault"
)

// The marks of an installed object. The label selects what an entry
// installed; the version annotation tells which version it was.
const (
	LabelEntry        = "catalog.portcullis.dev/entry"
	AnnotationVersion = "catalog.portcullis.dev/version"
	// AnnotationClusterSelector limits a binding to the tenant's clusters
	// whose labels match (a label selector in its string form).
	AnnotationClusterSelector = "portcullis.dev/cluster-selector"
)

// actions are the validation actions an install may choose.
var actions = []string{"Deny", "Warn", "Audit"}

// Options are the tenant's choices at install.
type Options struct {
	// Action is the bindings' validation action: Deny (the default), Warn
	// or Audit.
	Action string
	// ClusterSelector, when set, is put on every binding as the
	// portcullis.dev/cluster-selector annotation.
	ClusterSelector string
}

// normalize checks the options and fills the defaults.
func (o Options) normalize() (Options, error) {
	switch {
	case o.Action == "":
		o.Action = "Deny"
	default:
		found := false
		for _, a := range actions {
			if strings.EqualFold(a, o.Action) {
				o.Action, found = a, true
			}
		}
		if !found {
			return o, fault.InvalidField("action", "must be Deny, Warn or Audit, not %q", o.Action)
		}
	}
	if o.ClusterSelector != "" {
		if _, err := labels.Parse(o.ClusterSelector); err != nil {
			return o, fault.InvalidField("clusterSelector", "not a label selector: %v", err)
		}
	}
	return o, nil
}

// Objects renders the entry with the options: its objects as they are to
// be applied, each labelled with the entry and annotated with its version.
func (e Entry) Objects(opts Options) ([]map[string]any, error) {
	opts, err := opts.normalize()
	if err != nil {
		return nil, err
	}
	objs, err := decodeYAML(e.YAML)
	if err != nil {
		return nil, fmt.Errorf("catalog entry %s: %w", e.Name, err)
	}
	for _, o := range objs {
		meta, _ := o["metadata"].(map[string]any)
		if meta == nil {
			meta = map[string]any{}
			o["metadata"] = meta
		}
		setString(meta, "labels", LabelEntry, e.Name)
		setString(meta, "annotations", AnnotationVersion, e.Version)
		if o["kind"] != "ValidatingAdmissionPolicyBinding" {
			continue
		}
		spec, _ := o["spec"].(map[string]any)
		if spec == nil {
			spec = map[string]any{}
			o["spec"] = spec
		}
		spec["validationActions"] = []any{opts.Action}
		if opts.ClusterSelector != "" {
			setString(meta, "annotations", AnnotationClusterSelector, opts.ClusterSelector)
		}
	}
	return objs, nil
}

func setString(meta map[string]any, field, key, value string) {
	m, _ := meta[field].(map[string]any)
	if m == nil {
		m = map[string]any{}
		meta[field] = m
	}
	m[key] = value
}

// decodeYAML reads multi-document YAML into JSON-shaped maps, skipping
// empty documents.
func decodeYAML(b []byte) ([]map[string]any, error) {
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(b)))
	var out []map[string]any
	for {
		chunk, err := r.Read()
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return nil, err
		}
		js, err := yaml.YAMLToJSONStrict(chunk)
		if err != nil {
			return nil, fmt.Errorf("document %d: %w", len(out), err)
		}
		var o map[string]any
		if err := json.Unmarshal(js, &o); err != nil {
			return nil, fmt.Errorf("document %d: %w", len(out), err)
		}
		if o != nil {
			out = append(out, o)
		}
	}
}
