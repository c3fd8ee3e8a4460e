package decisions

import (
	"encoding/json"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgtype"
)

// columns of the decisions table, in the order row and appendRow write
// them.
var columns = []string{
	"id", "time", "tenant_id", "tenant", "cluster_id", "cluster", "uid", "operation",
	"api_group", "api_version", "resource", "subresource", "kind", "namespace", "name",
	"user_name", "user_groups", "dry_run", "verdict", "http_status", "code", "reason", "message",
	"warnings", "audit_annotations", "bindings", "policies", "denied_by",
	"failure_policy_applied", "timed_out", "latency_ms", "instance", "snapshot_version",
	"endpoint", "mutated", "mutated_by", "patch", "patch_truncated",
}

// row turns a decision into the values of one table row.
func row(d *Decision) ([]any, error) {
	id, err := uuid.Parse(d.ID)
	if err != nil {
		return nil, err
	}
	recs := bindingRecords(d.Bindings)
	annJSON := annotationsJSON(d.AuditAnnotations)
	bindJSON := bindingsJSON(recs)
	policies, deniedBy, mutatedBy, fpa := summarize(recs)
	patch, cut := storedPatch(d.Patch)
	cut = cut || d.PatchTruncated
	return []any{
		pgtype.UUID{Bytes: id, Valid: true}, d.Time, d.TenantID, clean(d.TenantName), d.ClusterID, clean(d.ClusterName),
		clean(d.UID), clean(d.Operation), clean(d.Group), clean(d.Version), clean(d.Resource), clean(d.SubResource),
		clean(d.Kind), clean(d.Namespace), clean(d.Name), clean(d.UserName), cleanAll(d.UserGroups), d.DryRun,
		string(d.Verdict), int32(d.HTTPStatus), d.Code, clean(d.Reason), clean(d.Message), cleanAll(d.Warnings),
		json.RawMessage(annJSON), json.RawMessage(bindJSON), policies, deniedBy,
		fpa, d.TimedOut, float64(d.Latency) / float64(time.Millisecond), clean(d.Instance), d.SnapshotVersion,
		endpoint(d), len(d.Patch) > 0, mutatedBy, string(cleanBytes(patch)), cut,
	}, nil
}
