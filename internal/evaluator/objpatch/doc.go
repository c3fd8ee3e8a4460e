// Package objpatch changes Kubernetes objects held as decoded JSON
// (map[string]any, integers as int64) the way the apiserver's
// MutatingAdmissionPolicy plugin changes them held as typed Go structs,
// without the typed round trips, and writes the change as a JSON patch.
// It is the object engine of the evaluator's fast mutation path; it knows
// nothing of policies, CEL or requests.
//
//   - Canonicalize gives the form the plugin's typed object has as JSON
//     (runtime.DefaultUnstructuredConverter's FromUnstructured then
//     ToUnstructured, for a kind of client-go's scheme), from a shape of
//     the Go type derived once by reflection (shape.go).
//   - ServerSideApply merges an apply configuration as the plugin's
//     server-side-apply patcher does, descending only where the apply
//     configuration has fields.
//   - ApplyJSONPatch applies add, remove and replace operations as the
//     plugin's JSON patch library does; DecodeJSON gives an operation's
//     value the request's number types.
//   - KeepPaths cuts a canonical object to the fields a set of paths
//     (FieldPaths) reads, so that decoding it into its typed struct costs
//     only what is read.
//   - CarryOver carries a change made to the canonical form over to the
//     object as the request spelled it, and Diff writes the RFC 6902 patch
//     between two objects.
//
// Every function is exact or declines: where it is not sure to give what
// the plugin gives (a value the typed decode would refuse or change in a
// way not modelled, an operation the library would refuse, a merge that
// errs), it returns false and the caller takes the exact path, where the
// plugin's own code runs and says what the plugin says. Nothing here
// modifies its inputs but where a doc comment says so; results share
// unchanged maps and slices with the inputs.
//
// The shapes of Go types, the canonical forms of custom-typed strings (a
// quantity's "500m") and which schema types may hold keyed lists are
// cached for the life of the process; the caches are bounded by the
// scheme's types, but for the custom values' memo, which is emptied when
// full.
//
// It imports no package of the project (internal/archtest checks it;
// internal/fault would be the one allowed).
package objpatch
