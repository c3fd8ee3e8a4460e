package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/portcullis-dev/portcullis/internal/apiv1"
)

func cmdCRDsImport(e *env, args []string) error {
	return e.importInventory(args, inventoryImport{
		command:  "crds import",
		objects:  "CustomResourceDefinition objects, YAML or JSON, as kubectl get crd -o yaml prints them",
		resource: "crds",
		noun:     "CustomResourceDefinitions",
		count: func(raw []byte) (int, error) {
			var r apiv1.CRDImport
			err := json.Unmarshal(raw, &r)
			return r.CRDs, err
		},
	})
}

// storedCRD is what the table shows of a CustomResourceDefinition.
type storedCRD struct {
	Metadata struct {
		Name              string    `json:"name"`
		CreationTimestamp time.Time `json:"creationTimestamp"`
	} `json:"metadata"`
	Spec struct {
		Names      struct{ Kind string }      `json:"names"`
		Scope      string                     `json:"scope"`
		Versions   []struct{ Name string }    `json:"versions"`
		Conversion *struct{ Strategy string } `json:"conversion"`
	} `json:"spec"`
}

func (e *env) getCRDs(cl *client, c *connFlags, tenant, cluster, name string) error {
	// The raw items too: NAME prints its own object for -o json.
	items, raw, err := listAll[json.RawMessage](e, cl, apiPath("tenants", tenant, "clusters", cluster, "crds"), nil)
	if err != nil {
		return err
	}
	crds, err := decodeItems[storedCRD](items)
	if err != nil {
		return err
	}
	if name != "" {
		i := -1
		for j, crd := range crds {
			if crd.Metadata.Name == name {
				i = j
			}
		}
		if i < 0 {
			return fmt.Errorf("CustomResourceDefinition %q is not in the inventory of cluster %q (upload it with `admin crds import`)", name, cluster)
		}
		crds, raw = crds[i:i+1], indentJSON(items[i])
	}
	return e.emit(c, raw, func(w io.Writer) error { return printCRDs(w, e.now(), crds) })
}

func printCRDs(w io.Writer, now time.Time, crds []storedCRD) error {
	t := newTable(w, "NAME", "KIND", "SCOPE", "VERSIONS", "CONVERSION", "AGE")
	for _, crd := range crds {
		versions := make([]string, len(crd.Spec.Versions))
		for i, v := range crd.Spec.Versions {
			versions[i] = v.Name
		}
		strategy := "None"
		if crd.Spec.Conversion != nil && crd.Spec.Conversion.Strategy != "" {
			strategy = crd.Spec.Conversion.Strategy
		}
		t.row(crd.Metadata.Name, crd.Spec.Names.Kind, crd.Spec.Scope, strings.Join(versions, ","), strategy,
			age(now, crd.Metadata.CreationTimestamp))
	}
	return t.flush()
}
