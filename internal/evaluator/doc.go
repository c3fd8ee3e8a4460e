// Package evaluator compiles a tenant's ValidatingAdmissionPolicies, bindings
// and params into an immutable, indexed Snapshot (Compile) and evaluates
// admission requests against it (Snapshot.Validate) with the semantics of
// the kube-apiserver ValidatingAdmissionPolicy plugin (k8s.io/apiserver
// v0.37.x). It is pure: no database, no HTTP.
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
// views agree on values, size and has(), not on type-confused expressions
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
