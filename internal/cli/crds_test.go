package cli

import (
	"bytes"
	"encoding/json"
	"testing"
)

func TestCRDTable(t *testing.T) {
	items := []json.RawMessage{
		json.RawMessage(`{"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition",
		  "metadata":{"name":"gadgets.example.com","creationTimestamp":"2026-11-23T11:00:00Z"},
		  "spec":{"group":"example.com","names":{"kind":"Gadget","plural":"gadgets"},"scope":"Cluster",
		    "versions":[{"name":"v1"}],"conversion":{"strategy":"Webhook"}}}`),
		json.RawMessage(`{"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition",
		  "metadata":{"name":"widgets.example.com"},
		  "spec":{"group":"example.com","names":{"kind":"Widget","plural":"widgets"},"scope":"Namespaced",
		    "versions":[{"name":"v1"},{"name":"v2"}]}}`),
	}
	crds, err := decodeItems[storedCRD](items)
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := printCRDs(&b, now, crds); err != nil {
		t.Fatal(err)
	}
	want := `NAME                  KIND     SCOPE        VERSIONS   CONVERSION   AGE
gadgets.example.com   Gadget   Cluster      v1         Webhook      60m
widgets.example.com   Widget   Namespaced   v1,v2      None         <unknown>
`
	if b.String() != want {
		t.Fatalf("table:\n%s\nwant:\n%s", b.String(), want)
	}
}
