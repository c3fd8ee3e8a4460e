// Package evaluator compiles a tenant's ValidatingAdmissionPolicies,
// MutatingAdmissionPolicies, their bindings and params into an immutable,
// indexed Snapshot (Compile) and evaluates admission requests against it
// (Snapshot.Evaluate, as the Validating or the Mutating kind) with the
// semantics of the
// kube-apiserver ValidatingAdmissionPolicy and MutatingAdmissionPolicy
// plugins (k8s.io/apiserver v0.37.x). It is pure: no database, no HTTP.
//
// # Compiling
//
// Expressions are compiled with the apiserver's own CEL environment,
// compiler and libraries, as the plugin compiles them (variables composed
// the same way, the same accessors), in the StoredExpressions or the
// NewExpressions environment. Compilers are pooled and identical compile
// results shared between policies and snapshots (compiler_pool.go,
// progcache.go). A compile error never stops a snapshot from loading: it
// is kept, reported by CompileErrors, and applied at evaluation time
// through the policy's failurePolicy. An expression that uses the
// authorizer is a compile error here, since authorization checks cannot
// run outside the cluster.
//
// # Evaluating
//
// The dispatch (dispatch.go) is re-implemented after the apiserver's
// generic policy dispatcher: matchConstraints and the binding's
// matchResources, params and parameterNotFoundAction, the namespace object,
// the deadline, matchConditions, variables and failurePolicy are shared by
// every policy kind; what a kind does with a matching invocation is behind
// the policyKind interface. The validating kind (validating.go) runs the
// validations, their messageExpressions and the audit annotations and
// applies the binding's validationActions; DenialStatus renders a denial as
// the plugin does. A differential test in test/differential holds the
// answers to the plugin's, byte for byte.
//
// The plugin's answers are kept while doing less work than it does: an
// index of the policies' resource rules skips policies that cannot match;
// the request's object, namespace and request values are converted to CEL
// once per request; a variable that reads no other variable is evaluated
// once per request for each request and namespace value it can see (once
// for all policies that define it alike, when it reads no params either),
// and its recorded cost is charged wherever the plugin would evaluate it
// again.
//
// # Objects
//
// CEL sees a request's objects as the plugin does (typed.go): for a kind
// the apiserver's scheme knows (client-go's scheme, looked up by the kind
// the webhook received), object and oldObject are the reflective view of
// the typed struct (common.SchemalessTypedToVal), for every expression
// list and its variables; for a custom resource, the decoded JSON. The
// views agree on values, size and has(), but for explicit JSON nulls (an
// absent field on the typed view, a present one in JSON: the fast
// interpreter declines every read of one) and type-confused expressions
// (a map compared with a string is an error on the typed view, false on
// JSON). The typed struct is decoded from the JSON when cel-go first reads
// object or oldObject, since decoding a Pod costs several evaluations and
// the fast interpreter, which reads the JSON, declines every expression
// whose answer depends on the view. An object that does not decode into
// its type (an apiserver never sends one) fails every expression list of
// the request with the plugin's "failed to prepare object variable"
// error; found on the fast path, it makes the request be evaluated again
// exactly, where each list checks it first. Params of built-in kinds are
// JSON, as the plugin wraps and converts the typed informer's object.
//
// An objectSelector reads the object's labels; a kind without ObjectMeta
// in the scheme (the CONNECT options kinds) has none, so only an empty
// selector matches it (match.go).
//
// # Mutating
//
// The mutating kind (mutating.go, mutating_patch.go) mirrors the plugin's
// dispatcher: CREATE, UPDATE and CONNECT only; each invocation's mutations
// in list order, each seeing the result of the one before; an error that
// is not a StatusError goes to the failurePolicy (reason Invalid) and the
// next mutation still runs; a StatusError (a 503 for a kind without a
// schema, a 500 for a result the typed object refuses) ends the request
// whatever the failurePolicy. Policies run in name order, then bindings in
// name order, then params in (namespace, name) order; the plugin's own
// order is that of its informers' maps, which is not defined, so this is
// one of the orders it may take. A Mutating evaluation returns the object after the
// admission chain's second pass, in which the plugin re-runs the
// reinvocationPolicy IfNeeded invocations that reached their mutations in
// the first, when any mutation in the first pass was applied (even one
// that changed nothing: the plugin's Dirty flag).
//
// A built-in kind first takes the fast mutation path (mutfast.go,
// mutfast_paths.go), whose object engine is package objpatch: the object
// is held as the canonical JSON of its typed Go object
// (objpatch.Canonicalize, a reflection-free typed round trip from a shape
// of the Go type), apply configurations are merged with the type's
// structured-merge-diff schema only where they have fields
// (objpatch.ServerSideApply), JSON patches are applied to the map
// (objpatch.ApplyJSONPatch), and the typed CEL view is decoded only for
// the fields a policy selects (objpatch.KeepPaths). It
// declines whatever it is not sure to do as the plugin does (errors,
// test/move/copy, unknown fields, values the typed decode would refuse or
// change in ways it does not model), and the request is then evaluated
// again from the start on the exact path below; FastMutationCounts counts
// both, and the differential tests check which path each case takes.
//
// On the exact path the mutations are applied by the apiserver's patch
// package itself (NewApplyConfigurationPatcher, NewJSONPatcher): only
// their expressions are evaluated here, in the evaluator's frames, without
// the fast interpreter. The object is held as the plugin holds it: a kind of
// client-go's scheme as its typed Go object (decoded from the request's
// JSON), anything else unstructured; server-side-apply merges use
// client-go's type converter over the built-in OpenAPI models, and for a
// custom resource the converter the plugin builds from the apiserver's
// OpenAPI v3 document of its CRD, built here with the same
// apiextensions-apiserver code from the CRD in the cluster's inventory
// (CRDSchemaLookup) and cached by the tenant's CRD spec
// (crd_typeconverter.go).
// A kind with neither has none (the plugin's 503 "Resource kind ... not
// found"), and Result.MissingCRD says so. Expressions see the object's JSON form, or its typed view once
// a matchCondition was evaluated in the same pass, as the plugin's
// LazyObject does (it is used here too). The answer is an RFC 6902 patch
// from the request's JSON to the final object: the change the mutations
// made to the held object, carried over to the JSON as sent
// (objpatch.CarryOver, objpatch.Diff).
//
// What differs from the plugin in a cluster, and why:
//   - Defaulting. The plugin runs the scheme's defaulter after every
//     mutation; kube-apiserver's scheme has the built-in defaulters,
//     client-go's has none. The apiserver defaults the object again after
//     applying a webhook's patch, so the object it stores is the same;
//     only a later policy that reads a field defaulting would have filled
//     in after an earlier mutation (a new container's
//     terminationMessagePath, say) can see a difference.
//   - Namespaces. The plugin refuses a request whose namespace does not
//     exist (404); here a namespace the inventory lacks makes the
//     failurePolicy decide for the bindings that need it, as for
//     validating policies.
//   - Versions. A policy that matched the request in another version than
//     the webhook received it in (matchPolicy Equivalent) cannot have its
//     object converted here: the failurePolicy decides ("failed to convert
//     object version").
//   - Reinvocation across webhooks. A Mutating evaluation answers one webhook call with
//     both of the plugin's passes. When the apiserver calls the webhook
//     again because another webhook changed the object afterwards, the
//     gateway evaluates that request afresh, both passes again, where the
//     in-process plugin would re-run only its IfNeeded invocations once.
//
// Speed. On the fast path a mutation runs several times faster than the
// plugin: the five policies of samples/mutating on the baseline Pod take
// 2.4 ms against the plugin's 15.5 ms, with 2,227 allocations against
// 17,862 (6.5x; docs/benchmarks.md, scripts/bench-evaluator.sh, which
// times the two in alternating rounds). A request the fast path declines
// costs what the fast path spent before declining plus the exact path,
// which does the plugin's own work (typed conversions, whole-object
// structured merges, a JSON round trip of the object per JSON patch) and
// runs at about the plugin's speed (0.93x, measured before the fast path
// existed). Custom resources, and requests whose kind the apiserver
// converted for the webhook, always take the exact path.
//
// # The fast interpreter
//
// Package fastcel is a second evaluator for the common subset of CEL that
// most policies are written in: expressions over object, oldObject, params
// (when it is the plain decoded map cel-go reads) and variables, with
// literals, field selection, indexing and has(), list and map literals,
// ! && || ?: == != < <= > >= in + - * and negation on strings, integers,
// doubles, booleans and null, size, startsWith, endsWith, contains, join,
// matches with a constant pattern, all, exists, exists_one, map and filter
// over lists, and optionals. It reads the decoded JSON directly, without
// cel-go's interpreter and its step-by-step cost tracking. Expressions that
// read request or namespaceObject, or call anything else, always go to
// cel-go.
//
// It stays exact this way:
//   - It answers only with a plain value (a bool, string, null, int or
//     double) and declines anything else: an error, a type it does not
//     handle the way cel-go does, a map to iterate, a cancelled context.
//     A declined expression is evaluated by its cel-go program, whose value
//     and cost are used. Evaluation is pure, so doing it twice cannot be
//     observed.
//   - Instead of the exact runtime cost it computes an upper bound, node by
//     node, of what cel-go's cost tracker charges, and declines when the
//     bound passes 100,000, so a result it gives can never have been
//     cel-go's per-expression cost-limit error (1e6).
//   - The per-evaluation budgets (1e7 for a binding's validations and
//     messages, and for its audit annotations; 2.5e6 for its
//     matchConditions) are checked against these bounds.
//     When such a check fails, the whole request is evaluated again with
//     cel-go only (ExactReevaluations counts it), so the out-of-budget
//     errors and their wording come only from exact costs; a check that
//     passes on bounds would pass on the smaller exact costs too.
//   - Traced evaluations (WithTrace) do not use it, so traces show cel-go's
//     own costs.
//
// fastcel's TestMatchesCEL holds it to cel-go's values and costs on
// generated expressions and objects; this package's tests and fuzz test
// compare whole results with and without it.
package evaluator
