package inventory_test

import (
	"github.com/portcullis-dev/portcullis/internal/evaluator"
	"github.com/portcullis-dev/portcullis/internal/inventory"
)

// The evaluator reads a cluster's inventory through its own interface; the
// inventory does not import the evaluator, so this is where the two meet.
var (
	_ evaluator.NamespaceLookup = (*inventory.Cluster)(nil)
	_ evaluator.CRDLookup       = (*inventory.Cluster)(nil)
	_ evaluator.CRDSchemaLookup = (*inventory.Cluster)(nil)
)
