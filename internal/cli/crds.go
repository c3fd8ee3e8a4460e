package cli

import (
	"io"
	"strings"
	"time"

	"github.com/portcullis-dev/portcullis/internal/apiv1"
)

var crdInventory = inventoryKind[storedCRD]{
	resource: "crds",
	one:      "CustomResourceDefinition",
	objects:  "CustomResourceDefinition objects, YAML or JSON, as kubectl get crd -o yaml prints them",
	noun:     "CustomResourceDefinitions",
	imported: count(func(r apiv1.CRDImport) int { return r.CRDs }),
	nameOf:   func(crd storedCRD) string { return crd.Metadata.Name },
	print:    printCRDs,
}

func cmdCRDsImport(e *env, args []string) error { return importInventory(e, args, crdInventory) }

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
