// Package decisions holds the record of one answered admission request and
// the recorders that keep them.
package decisions

import (
	"context"
	"log/slog"
	"time"
)

// Verdict is the outcome of one request.
type Verdict string

// Verdicts. Error is a request the gateway could not evaluate (a bad body,
// no policy snapshot available, a panic): the HTTP status says why.
const (
	VerdictAllowed  Verdict = "allowed"
	VerdictDenied   Verdict = "denied"
	VerdictWarned   Verdict = "warned" // allowed with warnings
	VerdictError    Verdict = "error"
	VerdictRejected Verdict = "rejected" // refused before evaluation (4xx)
)

// Decision is everything recorded about one webhook request.
type Decision struct {
	ID       string
	Time     time.Time
	Instance string

	TenantID    int64
	TenantName  string
	ClusterID   int64
	ClusterName string

	UID         string
	Operation   string
	Group       string
	Version     string
	Resource    string
	SubResource string
	Kind        string
	Namespace   string
	Name        string
	UserName    string
	UserGroups  []string
	DryRun      bool

	Verdict Verdict
	// HTTPStatus is the status of the HTTP answer (200 for any evaluated
	// request, whatever the verdict).
	HTTPStatus int
	// Code and Message are the AdmissionResponse status on a denial, or the
	// error on a rejected or failed request.
	Code     int32
	Reason   string
	Message  string
	Warnings []string
	// AuditAnnotations keep the evaluator's (the apiserver plugin's) keys.
	AuditAnnotations []AuditAnnotation
	// Bindings are the evaluated bindings, as the evaluator reported them;
	// the recorder cleans their text when it stores them.
	Bindings         []BindingRecord
	UnknownNamespace string
	TimedOut         bool

	// Endpoint is the webhook that answered: EndpointValidate (also when
	// empty) or EndpointMutate.
	Endpoint string
	// Patch is the RFC 6902 patch a /mutate answer carried; nil when the
	// object did not change. Set it with SetPatch, which keeps at most
	// MaxPatchBytes and sets PatchTruncated when it cut.
	Patch          []byte
	PatchTruncated bool

	SnapshotVersion int64
	Latency         time.Duration
}

// The webhook endpoints a decision comes from.
const (
	EndpointValidate = "validate"
	EndpointMutate   = "mutate"
)

// MaxPatchBytes bounds the patch a decision stores: a mutation can make an
// object many times its size (a list of sidecars), and every decision row
// is written on the request path's behalf. 16 KiB keeps what a person reads
// while keeping the row a few times the size of a validating one at most.
const MaxPatchBytes = 16 << 10

// SetPatch records p, cut to MaxPatchBytes. A cut patch is copied, so that
// a decision waiting in the recorder's queue or spill holds 16 KiB, not
// the whole answer.
func (d *Decision) SetPatch(p []byte) {
	kept, cut := storedPatch(p)
	if cut {
		kept = append([]byte(nil), kept...)
	}
	d.Patch, d.PatchTruncated = kept, cut
}

// AuditAnnotation is one audit annotation of a decision, in the order the
// bindings gave them; a repeated key keeps its last value when stored.
type AuditAnnotation struct {
	Key   string
	Value string
}

// OutcomeNotMatched is the outcome of a binding whose matchConditions did
// not hold. Outcomes are the evaluator's words, stored as given; this one
// is spelled here because a binding with it does not count as a policy
// that matched (the policies column). The webhook's tests keep it equal to
// the evaluator's.
const OutcomeNotMatched = "NotMatched"

// OutcomeClusterSkipped is the outcome of a binding whose cluster selector
// did not select the cluster that sent the request: recorded, so that an
// admin can see why a policy did not apply there, but not a match either.
const OutcomeClusterSkipped = "ClusterSkipped"

// Recorder takes decisions. Record must never block the request.
type Recorder interface {
	Record(*Decision)
}

// Recorders hands each decision to every recorder, in order.
type Recorders []Recorder

// Record implements Recorder.
func (rs Recorders) Record(d *Decision) {
	for _, r := range rs {
		r.Record(d)
	}
}

// LogRecorder writes each decision as one structured log line.
type LogRecorder struct{ Logger *slog.Logger }

// Record implements Recorder.
func (l LogRecorder) Record(d *Decision) {
	ctx := context.Background()
	// Checked first so that a disabled level costs no attribute building on
	// the request path.
	if !l.Logger.Enabled(ctx, slog.LevelInfo) {
		return
	}
	l.Logger.LogAttrs(ctx, slog.LevelInfo, "admission decision",
		slog.String("id", d.ID),
		slog.String("tenant", d.TenantName),
		slog.String("cluster", d.ClusterName),
		slog.String("uid", d.UID),
		slog.String("operation", d.Operation),
		slog.String("resource", d.Resource),
		slog.String("namespace", d.Namespace),
		slog.String("name", d.Name),
		slog.String("endpoint", endpoint(d)),
		slog.String("verdict", string(d.Verdict)),
		slog.Bool("mutated", len(d.Patch) > 0),
		slog.Int("http_status", d.HTTPStatus),
		slog.Int("code", int(d.Code)),
		slog.String("message", d.Message),
		slog.Bool("dry_run", d.DryRun),
		slog.Int64("snapshot_version", d.SnapshotVersion),
		slog.Duration("latency", d.Latency),
	)
}
