// Package catalog is the policy catalog embedded in the gateway: ready-made
// ValidatingAdmissionPolicies (the Pod Security Standards and common best
// practices) with their bindings and ConfigMap params, which a tenant
// installs with one call and may then read and change like its own.
//
// An entry is one multi-document YAML file under entries/, described in
// entries/index.yaml (its version, summary and params). Install renders an
// entry for one tenant: the validation action of its bindings, an optional
// cluster selector, and labels naming the entry and its version, by which
// an upgrade finds what was installed.
package catalog

import (
	"embed"
	"fmt"
	"slices"
	"sort"
	"strings"

	"sigs.k8s.io/yaml"
)

//go:embed entries/*.yaml
var files embed.FS

// Entry is one catalog entry.
type Entry struct {
	Name    string `json:"name"`
	Version string `json:"version"`
	// Digest is the first 16 hex digits of the SHA-256 of the entry's
	// file, as recorded with its version.
	Digest      string  `json:"digest"`
	Category    string  `json:"category"`
	Description string  `json:"description"`
	Params      []Param `json:"params,omitempty"`
	// YAML is the entry's objects as shipped: multi-document YAML.
	YAML []byte `json:"-"`
}

// Param is one key of an entry's ConfigMap param.
type Param struct {
	ConfigMap   string `json:"configMap"`
	Key         string `json:"key"`
	Default     string `json:"default"`
	Description string `json:"description"`
}

type index struct {
	Entries []Entry `json:"entries"`
}

var entries = mustLoad()

func mustLoad() []Entry {
	es, err := load()
	if err != nil {
		// The catalog is compiled in; TestCatalogLoads fails first.
		panic(err)
	}
	return es
}

func load() ([]Entry, error) {
	raw, err := files.ReadFile("entries/index.yaml")
	if err != nil {
		return nil, err
	}
	var idx index
	if err := yaml.UnmarshalStrict(raw, &idx); err != nil {
		return nil, fmt.Errorf("entries/index.yaml: %w", err)
	}
	for i := range idx.Entries {
		e := &idx.Entries[i]
		if e.YAML, err = files.ReadFile("entries/" + e.Name + ".yaml"); err != nil {
			return nil, fmt.Errorf("entry %s: %w", e.Name, err)
		}
	}
	sort.Slice(idx.Entries, func(i, j int) bool { return idx.Entries[i].Name < idx.Entries[j].Name })
	return idx.Entries, nil
}

// List returns every entry, by name.
func List() []Entry { return slices.Clone(entries) }

// Get returns the entry named name.
func Get(name string) (Entry, bool) {
	i, ok := slices.BinarySearchFunc(entries, name, func(e Entry, n string) int { return strings.Compare(e.Name, n) })
	if !ok {
		return Entry{}, false
	}
	return entries[i], true
}
