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
	return getInventory(e, cl, c, inventoryGet[storedCRD]{
		tenant: tenant, cluster: cluster, resource: "crds", name: name,
		nameOf:  func(crd storedCRD) string { return crd.Metadata.Name },
		missing: fmt.Sprintf("CustomResourceDefinition %q is not in the inventory of cluster %q (upload it with `admin crds import`)", name, cluster),
		print:   printCRDs,
	})
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
