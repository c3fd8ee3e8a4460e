package evaluator

import (
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Request is one admission request, decoded once, in the form the evaluator
// reads. Kind/Resource/SubResource are what the webhook received;
// RequestKind/RequestResource/RequestSubResource are the original request
// (the apiserver's attributes). They are equal unless the webhook
// configuration made the apiserver convert the object.
type Request struct {
	UID                string
	Kind               schema.GroupVersionKind
	Resource           schema.GroupVersionResource
	SubResource        string
	RequestKind        schema.GroupVersionKind
	RequestResource    schema.GroupVersionResource
	RequestSubResource string
	Name               string
	Namespace          string
	Operation          admissionregistrationv1.OperationType // CREATE, UPDATE, DELETE or CONNECT
	UserInfo           authenticationv1.UserInfo
	// Object and OldObject are the decoded JSON objects (nil when absent), as
	// encoding/json or the apimachinery JSON helpers produce them:
	// map[string]any, []any, string, bool, int64/float64 (or json.Number
	// converted to those), nil.
	Object    map[string]any
	OldObject map[string]any
	// Options is the operation's options object (CreateOptions, ...), as raw
	// JSON or a decoded object; it is what CEL sees as request.options.
	Options runtime.RawExtension
	DryRun  bool
	// ClusterLabels are not part of the AdmissionReview: they are the
	// labels of the tenant's cluster that sent it, which bindings with a
	// ClusterSelectorAnnotation are matched against. Nil is a cluster
	// without labels.
	ClusterLabels map[string]string
}

// normalizeRequest fills whichever of the received and the original
// kind/resource is missing from the other.
func normalizeRequest(req *Request) *Request {
	r := *req
	if r.RequestKind.Empty() {
		r.RequestKind = r.Kind
	}
	if r.RequestResource.Empty() {
		r.RequestResource = r.Resource
		if r.RequestSubResource == "" {
			r.RequestSubResource = r.SubResource
		}
	}
	if r.Kind.Empty() {
		r.Kind = r.RequestKind
	}
	if r.Resource.Empty() {
		r.Resource = r.RequestResource
		if r.SubResource == "" {
			r.SubResource = r.RequestSubResource
		}
	}
	return &r
}

// NamespaceLookup returns a namespace's whole object. false means the
// namespace is unknown to the inventory.
type NamespaceLookup interface {
	Namespace(name string) (*corev1.Namespace, bool)
}

// ProvisionalNamespaces is implemented by a NamespaceLookup that also
// holds what allowed requests proposed for a namespace and nothing has
// confirmed yet: another admission step may have rejected it after the
// gateway allowed it. Matching uses it only in the stricter direction: a
// binding's namespaceSelector applies when it matches the committed labels
// or the provisional ones, so a provisional label can make a binding
// apply, never stop it from applying. namespaceObject is the committed
// object, and is unknown while a provisional object that differs from it
// is held: the committed one is then older than a change the gateway
// allowed.
type ProvisionalNamespaces interface {
	ProvisionalNamespace(name string) (*corev1.Namespace, bool)
}

// NamespaceMap is a NamespaceLookup backed by a map, for tests and tools.
type NamespaceMap map[string]*corev1.Namespace

// Namespace implements NamespaceLookup.
func (m NamespaceMap) Namespace(name string) (*corev1.Namespace, bool) {
	ns, ok := m[name]
	return ns, ok
}
