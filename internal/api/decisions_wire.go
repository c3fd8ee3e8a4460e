package api

import (
	"github.com/portcullis-dev/portcullis/internal/apiv1"
	"github.com/portcullis-dev/portcullis/internal/auditlog"
	"github.com/portcullis-dev/portcullis/internal/decisions"
)

// The stores' decision and audit types carry no wire format; these make
// the apiv1 shapes of them. Nil slices and maps stay nil (JSON null), as
// the API has always sent them.

func decisionList(p decisions.Page) apiv1.DecisionList {
	out := apiv1.DecisionList{Continue: p.Continue}
	if p.Items != nil {
		out.Items = make([]apiv1.Decision, len(p.Items))
		for i, r := range p.Items {
			out.Items[i] = decisionOut(r)
		}
	}
	return out
}

func decisionOut(r decisions.Record) apiv1.Decision {
	d := apiv1.Decision{
		ID: r.ID, Time: r.Time, Tenant: r.Tenant, Cluster: r.Cluster, UID: r.UID, Operation: r.Operation,
		Group: r.Group, Version: r.Version, Resource: r.Resource, SubResource: r.SubResource, Kind: r.Kind,
		Namespace: r.Namespace, Name: r.Name, UserName: r.UserName, UserGroups: r.UserGroups, DryRun: r.DryRun,
		Verdict: string(r.Verdict), HTTPStatus: r.HTTPStatus, Code: r.Code, Reason: r.Reason, Message: r.Message,
		Warnings: r.Warnings, AuditAnnotations: r.AuditAnnotations, LatencyMs: r.LatencyMs, Instance: r.Instance,
		SnapshotVersion: r.SnapshotVersion, Endpoint: r.Endpoint, Mutated: r.Mutated, MutatedBy: r.MutatedBy,
		Patch: r.Patch, PatchTruncated: r.PatchTruncated,
	}
	if r.Bindings != nil {
		d.Bindings = make([]apiv1.DecisionBinding, len(r.Bindings))
		for i, b := range r.Bindings {
			d.Bindings[i] = apiv1.DecisionBinding{
				Policy: b.Policy, Binding: b.Binding, Param: b.Param, Outcome: b.Outcome, Denied: b.Denied,
				FailurePolicyApplied: b.FailurePolicyApplied, Timeout: b.Timeout, Error: b.Error,
				Messages: b.Messages, Mutated: b.Mutated, Reinvoked: b.Reinvoked,
			}
		}
	}
	return d
}

func decisionStatsOut(s decisions.Stats) apiv1.DecisionStats {
	out := apiv1.DecisionStats{Since: s.Since, Until: s.Until, Bucket: s.Bucket}
	if s.Buckets != nil {
		out.Buckets = make([]apiv1.DecisionBucket, len(s.Buckets))
		for i, b := range s.Buckets {
			out.Buckets[i] = apiv1.DecisionBucket{Start: b.Start, Total: b.Total, Verdicts: b.Verdicts,
				DeniedBy: b.DeniedBy, Clusters: b.Clusters}
		}
	}
	return out
}

func fleetStatsOut(s decisions.Stats, ts []decisions.TenantCounts) apiv1.FleetDecisionStats {
	st := decisionStatsOut(s)
	out := apiv1.FleetDecisionStats{Since: st.Since, Until: st.Until, Bucket: st.Bucket, Buckets: st.Buckets,
		Tenants: make([]apiv1.TenantDecisionCounts, len(ts))}
	for i, t := range ts {
		out.Tenants[i] = apiv1.TenantDecisionCounts{Tenant: t.Tenant, Total: t.Total, Verdicts: t.Verdicts, DeniedBy: t.DeniedBy}
	}
	return out
}

func auditEntryOut(e auditlog.Entry) apiv1.AuditEntry {
	return apiv1.AuditEntry{
		ID: e.ID, Time: e.Time, Actor: e.Actor, ActorName: e.ActorName, TokenID: e.TokenID, Tenant: e.Tenant,
		Action: e.Action, Kind: e.Kind, Namespace: e.Namespace, Name: e.Name, VersionBefore: e.VersionBefore,
		VersionAfter: e.VersionAfter, DryRun: e.DryRun, Detail: e.Detail,
	}
}
