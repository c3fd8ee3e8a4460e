package inventory

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/portcullis-dev/portcullis/internal/fault"
	"github.com/portcullis-dev/portcullis/internal/pgnotify"
	"github.com/portcullis-dev/portcullis/internal/pgtext"
)

// CRDAPIVersion and CRDKind are what an uploaded CustomResourceDefinition
// must say it is: the v1 API, the only one a v1.37 apiserver serves.
const (
	CRDAPIVersion = "apiextensions.k8s.io/v1"
	CRDKind       = "CustomResourceDefinition"
)

var kindCRDList = schema.GroupKind{Group: "apiextensions.k8s.io", Kind: "CustomResourceDefinitionList"}

// CRD is one CustomResourceDefinition of a cluster: the few fields the
// gateway reads, decoded, and the whole object as uploaded. A local type
// rather than k8s.io/apiextensions-apiserver's: the store and the admin API
// read a few fields, and only the evaluator, which builds the type
// converters of custom resources from the whole object, needs that module.
type CRD struct {
	Name string
	Spec CRDSpec
	// Object is the uploaded object without metadata.managedFields.
	Object json.RawMessage
	// key identifies the CRD's spec within its tenant: the evaluator
	// caches the type converter it builds from the spec under it, so that
	// the clusters of a tenant that run the same CRD share one, and no
	// tenant's share another's. DecodeCRD sets it to a hash of the spec
	// (the converter reads nothing else; metadata and status differ from
	// cluster to cluster), ListCRDs prefixes the tenant.
	key string
}

// CRDSpec is the part of a CRD's spec the gateway reads.
type CRDSpec struct {
	Group      string         `json:"group"`
	Names      CRDNames       `json:"names"`
	Scope      string         `json:"scope"`
	Versions   []CRDVersion   `json:"versions"`
	Conversion *CRDConversion `json:"conversion,omitempty"`
}

// CRDNames are the CRD's names the gateway reads.
type CRDNames struct {
	Kind   string `json:"kind"`
	Plural string `json:"plural"`
}

// CRDVersion is one version of a CRD.
type CRDVersion struct {
	Name    string     `json:"name"`
	Served  bool       `json:"served"`
	Storage bool       `json:"storage"`
	Schema  *CRDSchema `json:"schema,omitempty"`
}

// CRDSchema holds a version's structural schema, undecoded.
type CRDSchema struct {
	OpenAPIV3Schema json.RawMessage `json:"openAPIV3Schema,omitempty"`
}

// CRDConversion is how the apiserver converts the CRD's objects between
// versions.
type CRDConversion struct {
	// Strategy is None (only apiVersion changes) or Webhook; unset means
	// None, as the apiserver defaults it.
	Strategy string `json:"strategy"`
}

// Conversion strategies.
const (
	ConversionNone    = "None"
	ConversionWebhook = "Webhook"
)

// Strategy is the CRD's conversion strategy, None when unset.
func (c *CRD) Strategy() string {
	if c.Spec.Conversion == nil || c.Spec.Conversion.Strategy == "" {
		return ConversionNone
	}
	return c.Spec.Conversion.Strategy
}

// GroupResource is the resource the CRD serves.
func (c *CRD) GroupResource() schema.GroupResource {
	return schema.GroupResource{Group: c.Spec.Group, Resource: c.Spec.Names.Plural}
}

// VersionNames are the names of the CRD's versions, in its order.
func (c *CRD) VersionNames() []string {
	out := make([]string, len(c.Spec.Versions))
	for i, v := range c.Spec.Versions {
		out[i] = v.Name
	}
	return out
}

// crdDocument is the wire form DecodeCRD reads.
type crdDocument struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Metadata   struct {
		Name string `json:"name"`
	} `json:"metadata"`
	Spec CRDSpec `json:"spec"`
}

// DecodeCRD decodes one CustomResourceDefinition from JSON. It checks only
// that the JSON has the shape of one; ReplaceCRDs checks its fields.
func DecodeCRD(js []byte) (*CRD, error) {
	var doc crdDocument
	if err := json.Unmarshal(js, &doc); err != nil {
		return nil, err
	}
	var whole map[string]any
	if err := json.Unmarshal(js, &whole); err != nil {
		return nil, err
	}
	if md, ok := whole["metadata"].(map[string]any); ok {
		delete(md, "managedFields")
	}
	obj, err := json.Marshal(whole)
	if err != nil {
		return nil, err
	}
	// json.Marshal writes map keys sorted: the same spec, however it was
	// formatted, has the same hash.
	spec, err := json.Marshal(whole["spec"])
	if err != nil {
		return nil, err
	}
	sum := sha256.Sum256(spec)
	return &CRD{Name: doc.Metadata.Name, Spec: doc.Spec, Object: obj, key: hex.EncodeToString(sum[:])}, nil
}

// checkCRD returns the field errors of a CRD the apiserver would not have
// stored, for the fields the gateway relies on.
func checkCRD(c *CRD) field.ErrorList {
	var errs field.ErrorList
	spec := field.NewPath("spec")
	if c == nil {
		return field.ErrorList{field.Required(field.NewPath("metadata", "name"), "")}
	}
	s := &c.Spec
	if s.Group == "" {
		errs = append(errs, field.Required(spec.Child("group"), ""))
	} else if msgs := validation.IsDNS1123Subdomain(s.Group); len(msgs) > 0 {
		errs = append(errs, field.Invalid(spec.Child("group"), s.Group, strings.Join(msgs, "; ")))
	} else if !strings.Contains(s.Group, ".") {
		errs = append(errs, field.Invalid(spec.Child("group"), s.Group, "should be a domain with at least one dot"))
	}
	names := spec.Child("names")
	if s.Names.Plural == "" {
		errs = append(errs, field.Required(names.Child("plural"), ""))
	} else if msgs := validation.IsDNS1035Label(s.Names.Plural); len(msgs) > 0 {
		errs = append(errs, field.Invalid(names.Child("plural"), s.Names.Plural, strings.Join(msgs, "; ")))
	}
	if s.Names.Kind == "" {
		errs = append(errs, field.Required(names.Child("kind"), ""))
	}
	switch {
	case c.Name == "":
		errs = append(errs, field.Required(field.NewPath("metadata", "name"), ""))
	case s.Group != "" && s.Names.Plural != "" && c.Name != s.Names.Plural+"."+s.Group:
		errs = append(errs, field.Invalid(field.NewPath("metadata", "name"), c.Name, "must be spec.names.plural+\".\"+spec.group"))
	}
	if s.Scope != "Namespaced" && s.Scope != "Cluster" {
		errs = append(errs, field.NotSupported(spec.Child("scope"), s.Scope, []string{"Cluster", "Namespaced"}))
	}
	versions := spec.Child("versions")
	if len(s.Versions) == 0 {
		errs = append(errs, field.Required(versions, "must have exactly one version marked as storage version"))
	}
	seen, storage := map[string]bool{}, 0
	for i, v := range s.Versions {
		at := versions.Index(i).Child("name")
		switch {
		case v.Name == "":
			errs = append(errs, field.Required(at, ""))
		case len(validation.IsDNS1035Label(v.Name)) > 0:
			errs = append(errs, field.Invalid(at, v.Name, strings.Join(validation.IsDNS1035Label(v.Name), "; ")))
		case seen[v.Name]:
			errs = append(errs, field.Duplicate(at, v.Name))
		}
		seen[v.Name] = true
		if v.Storage {
			storage++
		}
	}
	if len(s.Versions) > 0 && storage != 1 {
		errs = append(errs, field.Invalid(versions, storage, "must have exactly one version marked as storage version"))
	}
	if s.Conversion != nil {
		if st := s.Conversion.Strategy; st != "" && st != ConversionNone && st != ConversionWebhook {
			errs = append(errs, field.NotSupported(spec.Child("conversion", "strategy"), st, []string{ConversionNone, ConversionWebhook}))
		}
	}
	if len(errs) > 0 {
		return errs
	}
	nul, err := pgtext.JSONErrors(c.Object)
	if err != nil {
		return field.ErrorList{field.Invalid(nil, field.OmitValueType{}, err.Error())}
	}
	return nul
}

// ListCRDs returns the cluster's CRDs, by name.
func (s *Store) ListCRDs(ctx context.Context, tenantID, clusterID int64) ([]*CRD, error) {
	rows, err := s.pool.Query(ctx, `SELECT object FROM cluster_crds WHERE tenant_id = $1 AND cluster_id = $2 ORDER BY name`,
		tenantID, clusterID)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(row pgx.CollectableRow) (*CRD, error) {
		var js []byte
		if err := row.Scan(&js); err != nil {
			return nil, err
		}
		c, err := DecodeCRD(js)
		if err != nil {
			return nil, err
		}
		c.key = strconv.FormatInt(tenantID, 10) + "/" + c.key
		return c, nil
	})
}

// ReplaceCRDs makes crds the cluster's whole set of CustomResourceDefinitions:
// an upload is the source of truth, so CRDs not in it are removed. A bad CRD
// is refused with the path of each bad field, items[i] first.
func (s *Store) ReplaceCRDs(ctx context.Context, tenantID, clusterID int64, crds []*CRD) error {
	names := make([]string, 0, len(crds))
	objs := make([][]byte, 0, len(crds))
	seen := map[string]bool{}
	var errs field.ErrorList
	for i, c := range crds {
		item := field.NewPath("items").Index(i)
		if bad := checkCRD(c); len(bad) > 0 {
			for _, e := range bad {
				if e.Field == "" {
					e.Field = item.String()
				} else {
					e.Field = item.String() + "." + e.Field
				}
				errs = append(errs, e)
			}
			continue
		}
		if seen[c.Name] {
			errs = append(errs, field.Duplicate(item.Child("metadata", "name"), c.Name))
			continue
		}
		seen[c.Name] = true
		names, objs = append(names, c.Name), append(objs, c.Object)
	}
	if len(errs) > 0 {
		return invalid(kindCRDList, "", errs)
	}
	return pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		// The cluster must exist for the tenant even when the upload is
		// empty and nothing is inserted.
		var one int
		if err := tx.QueryRow(ctx, `SELECT 1 FROM clusters WHERE tenant_id = $1 AND id = $2`, tenantID, clusterID).Scan(&one); err != nil {
			if errors.Is(err, pgx.ErrNoRows) {
				return fault.Errorf(fault.NotFound, "cluster %d of tenant %d not found", clusterID, tenantID)
			}
			return err
		}
		b, err := s.bounds(ctx, tx, tenantID)
		if err != nil {
			return err
		}
		if len(names) > b.CRDs {
			return tooMany(kindCRDList, field.NewPath("items"), len(names), b.CRDs, "CRDs")
		}
		if _, err := tx.Exec(ctx, `DELETE FROM cluster_crds WHERE tenant_id = $1 AND cluster_id = $2 AND NOT (name = ANY($3))`,
			tenantID, clusterID, names); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `INSERT INTO cluster_crds (tenant_id, cluster_id, name, object)
			SELECT $1, $2, n, o FROM unnest($3::text[], $4::jsonb[]) AS u(n, o)
			ON CONFLICT (tenant_id, cluster_id, name) DO UPDATE SET object = EXCLUDED.object, updated_at = now()`,
			tenantID, clusterID, names, objs); err != nil {
			return namespaceWriteError(err, tenantID, clusterID)
		}
		// An empty name reloads the whole cluster's inventory on every
		// replica, CRDs included.
		return pgnotify.Notify(ctx, tx, ChannelNamespaces, fmt.Sprintf("%d:%d:", tenantID, clusterID))
	})
}

// crdIndex indexes CRDs by the resource they serve, for Cluster.
func crdIndex(crds []*CRD) map[schema.GroupResource]*CRD {
	m := make(map[schema.GroupResource]*CRD, len(crds))
	for _, c := range crds {
		m[c.GroupResource()] = c
	}
	return m
}
