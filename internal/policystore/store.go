// Package policystore keeps each tenant's admission policy objects in
// Postgres, with every version, and serves compiled snapshots of them from
// memory to the webhook (see Cache).
//
// Every store method takes the tenant ID first and scopes every query by it;
// a method that reads across tenants says All in its name. Public methods own
// their transaction; private helpers take it.
package policystore

import (
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// ChannelPolicies is the notification channel of policy changes. Payloads
// are "<tenant>:<version>".
const ChannelPolicies = "portcullis_policies"

// Store reads and writes policy objects.
type Store struct {
	pool *pgxpool.Pool
}

// New returns a store on pool.
func New(pool *pgxpool.Pool) *Store { return &Store{pool: pool} }

// Object is the current state of one stored object.
type Object struct {
	Ref
	APIVersion string
	// ResourceVersion is the tenant version of the object's last write; it
	// is also metadata.resourceVersion (as a decimal string) in Object.
	ResourceVersion int64
	UID             string
	Generation      int64
	Deleted         bool
	CreatedAt       time.Time
	UpdatedAt       time.Time
	// Object is the full stored object, server metadata included.
	Object *unstructured.Unstructured
}

// Operations recorded in a Version.
const (
	OpCreate   = "create"
	OpUpdate   = "update"
	OpDelete   = "delete"
	OpRollback = "rollback"
)

// Version is one immutable entry in an object's history.
type Version struct {
	Ref
	APIVersion string
	Version    int64
	Operation  string // OpCreate, OpUpdate, OpDelete (a tombstone) or OpRollback
	Author     string
	CreatedAt  time.Time
	RollbackOf int64 // the version restored, for OpRollback
	// Object is the object as written by this version; nil for a tombstone.
	Object *unstructured.Unstructured
}

// ListOptions filters List. Empty fields match everything.
type ListOptions struct {
	Group     string
	Kind      string
	Namespace string
	// LabelSelector uses the Kubernetes label selector syntax.
	LabelSelector string
}

// DeleteOptions qualify Delete.
type DeleteOptions struct {
	// ResourceVersion, if not empty, is a precondition as in Apply.
	ResourceVersion string
	// DryRun checks everything in the same transaction, which is then
	// rolled back: the tombstone returned is the one a real delete would
	// have written.
	DryRun bool
}

// DeleteResult is what Delete wrote (or, with DryRun, would have written).
type DeleteResult struct {
	// Tombstone is the version that records the deletion.
	Tombstone *Version
	// VersionBefore is the object's resourceVersion before the deletion.
	VersionBefore int64
}

// RollbackOptions say what Rollback restores.
type RollbackOptions struct {
	// ToVersion is the version to restore; it must not be a tombstone.
	ToVersion int64
	// ResourceVersion, if not empty, is a precondition as in Apply.
	ResourceVersion string
}

// RollbackResult is what Rollback wrote.
type RollbackResult struct {
	// Object is the object as stored after the rollback.
	Object *Object
	// VersionBefore is the object's resourceVersion before the rollback; 0
	// when it was deleted.
	VersionBefore int64
}
