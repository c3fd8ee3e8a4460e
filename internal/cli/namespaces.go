package cli

import (
	"io"
	"time"

	"github.com/portcullis-dev/portcullis/internal/apiv1"
)

var namespaceInventory = inventoryKind[storedObject]{
	resource: "namespaces",
	one:      "namespace",
	objects:  "Namespace objects, YAML or JSON, as kubectl get namespaces -o yaml prints them",
	noun:     "namespaces",
	imported: count(func(r apiv1.NamespaceImport) int { return r.Namespaces }),
	nameOf:   func(ns storedObject) string { return ns.Metadata.Name },
	print:    printNamespaces,
}

func cmdNamespacesImport(e *env, args []string) error {
	return importInventory(e, args, namespaceInventory)
}

func printNamespaces(w io.Writer, now time.Time, nss []storedObject) error {
	t := newTable(w, "NAME", "STATUS", "LABELS", "AGE")
	for _, ns := range nss {
		t.row(ns.Metadata.Name, ns.Status.Phase, labels(ns.Metadata.Labels), age(now, ns.Metadata.CreationTimestamp))
	}
	return t.flush()
}
