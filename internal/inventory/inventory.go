// Package inventory keeps what the gateway knows of each cluster's own
// objects, its Namespaces and CustomResourceDefinitions: in Postgres
// (Store) and in memory, per cluster (Cache). Uploads (admin namespaces
// import, admin crds import) replace a cluster's namespaces or CRDs; the
// webhook adds what the Namespace requests it allowed show, and never
// learns CRDs (a CRD request it allows is not committed yet). The evaluator
// reads a cluster's inventory through its NamespaceLookup and CRDLookup
// interfaces, which Cluster satisfies without either package importing the
// other.
//
// Every store method takes the tenant ID first, then the cluster ID, and
// scopes every query by both.
package inventory

import (
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/portcullis-dev/portcullis/internal/fault"
)

// ChannelNamespaces is the notification channel of inventory changes.
// Payloads are "<tenant>:<cluster>:<namespace>", namespace "" after an
// upload of namespaces or CRDs, which reloads the cluster's whole inventory.
const ChannelNamespaces = "portcullis_namespaces"

// Sources of committed namespaces: an upload, the sync, or the oldObject of
// a request (what the apiserver had stored).
const (
	SourceUpload   = "upload"
	SourceSync     = "sync"
	SourceObserved = "observed"
)

// SyncLease is how long after its last push a namespace sync counts as
// running: while it does, the gateway learns nothing from the cluster's
// traffic. The sync pushes a heartbeat well within it.
const SyncLease = 2 * time.Minute

// Store reads and writes cluster inventories.
type Store struct {
	pool     *pgxpool.Pool
	defaults Bounds
}

// New returns a store on pool.
func New(pool *pgxpool.Pool) *Store { return &Store{pool: pool} }

// The errors below give, through fault.Status, the Status the apiserver
// sends for the same failure.

func notFound(gk schema.GroupKind, name string) *fault.Error {
	return &fault.Error{Code: fault.NotFound, Group: gk.Group, Kind: gk.Kind, Name: name,
		Message: apierrors.NewNotFound(schema.GroupResource{Group: gk.Group, Resource: gk.Kind}, name).Error()}
}

// invalid is a 422 about one object with a cause per bad field, as
// apierrors.NewInvalid builds it.
func invalid(gk schema.GroupKind, name string, errs field.ErrorList) *fault.Error {
	st := apierrors.NewInvalid(gk, name, errs).ErrStatus
	return &fault.Error{Code: fault.Invalid, Message: st.Message, Causes: st.Details.Causes,
		Group: gk.Group, Kind: gk.Kind, Name: name}
}
