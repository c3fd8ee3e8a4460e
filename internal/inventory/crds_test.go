package inventory

import (
	"context"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/portcullis-dev/portcullis/internal/fault"
	"github.com/portcullis-dev/portcullis/internal/pgtest"
	"github.com/portcullis-dev/portcullis/internal/testutil"
)

// crdJSON is a CRD as kubectl get crd -o json prints one, with a status
// and managedFields.
func crdJSON(group, plural, strategy string, versions ...string) []byte {
	var vs []string
	for i, v := range versions {
		vs = append(vs, fmt.Sprintf(`{"name":%q,"served":true,"storage":%v,"schema":{"openAPIV3Schema":{"type":"object","x-kubernetes-preserve-unknown-fields":true}}}`, v, i == 0))
	}
	conv := ""
	if strategy != "" {
		conv = fmt.Sprintf(`,"conversion":{"strategy":%q}`, strategy)
	}
	return fmt.Appendf(nil, `{"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition",
		"metadata":{"name":"%s.%s","uid":"u1","managedFields":[{"manager":"kubectl"}]},
		"spec":{"group":%q,"names":{"kind":"Widget","plural":%q,"singular":"widget","listKind":"WidgetList"},"scope":"Namespaced",
		"versions":[%s]%s},
		"status":{"storedVersions":[%q]}}`, plural, group, group, plural, strings.Join(vs, ","), conv, versions[0])
}

func mustCRD(t *testing.T, js []byte) *CRD {
	t.Helper()
	c, err := DecodeCRD(js)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestCRDInventoryStore(t *testing.T) {
	ctx := context.Background()
	pool := pgtest.Pool(t)
	s := New(pool)
	tenant := pgtest.InsertTenant(t, pool)
	cluster, other := pgtest.InsertCluster(t, pool, tenant), pgtest.InsertCluster(t, pool, tenant)
	widgets := mustCRD(t, crdJSON("example.com", "widgets", "", "v1", "v2"))
	gadgets := mustCRD(t, crdJSON("example.com", "gadgets", "Webhook", "v1"))
	if err := s.ReplaceCRDs(ctx, tenant, cluster, []*CRD{widgets, gadgets}); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name  string
		check func() error
	}{
		{"listed by name, whole object kept without managedFields", func() error {
			list, err := s.ListCRDs(ctx, tenant, cluster)
			if err != nil {
				return err
			}
			if len(list) != 2 || list[0].Name != "gadgets.example.com" || list[1].Name != "widgets.example.com" {
				return errorf("list = %v", list)
			}
			w := list[1]
			if w.Strategy() != ConversionNone || !reflect.DeepEqual(w.VersionNames(), []string{"v1", "v2"}) ||
				w.Spec.Scope != "Namespaced" || w.Spec.Names.Kind != "Widget" || len(w.Spec.Versions[0].Schema.OpenAPIV3Schema) == 0 {
				return errorf("widgets = %+v", w.Spec)
			}
			if strings.Contains(string(w.Object), "managedFields") || !strings.Contains(string(w.Object), `"storedVersions"`) ||
				!strings.Contains(string(w.Object), `"singular"`) {
				return errorf("object = %s", w.Object)
			}
			if list[0].Strategy() != ConversionWebhook {
				return errorf("gadgets strategy = %q", list[0].Strategy())
			}
			// No two tenants share a cached type converter.
			if want := fmt.Sprintf("%d/%s", tenant, widgets.key); w.key != want {
				return errorf("widgets key = %q, want %q", w.key, want)
			}
			return nil
		}},
		{"clusters do not share CRDs", func() error {
			if list, err := s.ListCRDs(ctx, tenant, other); err != nil || len(list) != 0 {
				return errorf("other cluster: %d, %v", len(list), err)
			}
			return nil
		}},
		{"another tenant cannot write to the cluster", func() error {
			t2 := pgtest.InsertTenant(t, pool)
			if err := s.ReplaceCRDs(ctx, t2, cluster, []*CRD{widgets}); fault.ErrorCode(err) != fault.NotFound {
				return errorf("err = %v", err)
			}
			if err := s.ReplaceCRDs(ctx, t2, cluster, nil); fault.ErrorCode(err) != fault.NotFound {
				return errorf("empty upload: err = %v", err)
			}
			if list, err := s.ListCRDs(ctx, t2, cluster); err != nil || len(list) != 0 {
				return errorf("another tenant reads %d CRDs, %v", len(list), err)
			}
			return nil
		}},
		{"an upload replaces everything", func() error {
			if err := s.ReplaceCRDs(ctx, tenant, cluster, []*CRD{mustCRD(t, crdJSON("example.com", "widgets", "Webhook", "v2"))}); err != nil {
				return err
			}
			list, err := s.ListCRDs(ctx, tenant, cluster)
			if err != nil || len(list) != 1 || list[0].Strategy() != ConversionWebhook {
				return errorf("after upload: %v %v", list, err)
			}
			return nil
		}},
		{"bad CRDs are refused with the path of each bad field", func() error {
			noStorage := mustCRD(t, crdJSON("example.com", "things", "", "v1"))
			noStorage.Spec.Versions[0].Storage = false
			err := s.ReplaceCRDs(ctx, tenant, cluster, []*CRD{
				mustCRD(t, crdJSON("example.com", "widgets", "", "v1")),
				mustCRD(t, crdJSON("example.com", "widgets", "", "v1")),
				mustCRD(t, crdJSON("nodot", "parts", "Sometimes", "v1", "v1")),
				noStorage,
			})
			e, _ := err.(*fault.Error)
			var fields []string
			if e != nil {
				for _, c := range e.Causes {
					fields = append(fields, c.Field)
				}
			}
			want := []string{"items[1].metadata.name", "items[2].spec.group", "items[2].spec.versions[1].name",
				"items[2].spec.conversion.strategy", "items[3].spec.versions"}
			if e == nil || e.Code != fault.Invalid || !reflect.DeepEqual(fields, want) {
				return errorf("err = %v, fields %q, want %q", err, fields, want)
			}
			if list, err := s.ListCRDs(ctx, tenant, cluster); err != nil || len(list) != 1 {
				return errorf("a refused upload changed the inventory: %v %v", list, err)
			}
			return nil
		}},
		{"CRDs go with their cluster", func() error {
			if _, err := pool.Exec(ctx, `DELETE FROM clusters WHERE tenant_id = $1 AND id = $2`, tenant, cluster); err != nil {
				return err
			}
			var n int
			if err := pool.QueryRow(ctx, `SELECT count(*) FROM cluster_crds WHERE cluster_id = $1`, cluster).Scan(&n); err != nil || n != 0 {
				return errorf("%d CRDs left, %v", n, err)
			}
			return nil
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := tt.check(); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// An upload on one replica reaches the other's cached inventory.
func TestCRDUploadPropagates(t *testing.T) {
	ctx := context.Background()
	url := pgtest.URL(t)
	a, b := startCache(t, url), startCache(t, url)
	tenant := pgtest.InsertTenant(t, a.store.pool)
	cluster := pgtest.InsertCluster(t, a.store.pool, tenant)
	invB, err := b.Lookup(ctx, tenant, cluster)
	if err != nil {
		t.Fatal(err)
	}
	gr := schema.GroupResource{Group: "example.com", Resource: "widgets"}
	if _, _, ok := invB.CRDConversion(gr); ok {
		t.Fatal("a CRD before any upload")
	}
	if err := a.store.ReplaceCRDs(ctx, tenant, cluster, []*CRD{mustCRD(t, crdJSON("example.com", "widgets", "", "v1", "v2"))}); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, 0, "B to take the upload", func() bool {
		strategy, versions, ok := invB.CRDConversion(gr)
		return ok && strategy == ConversionNone && reflect.DeepEqual(versions, []string{"v1", "v2"}) && invB.CRDCount() == 1
	})
}

// The evaluator caches the type converter it builds from a CRD's spec
// under the key CRDObject returns: the same spec must give the same key,
// on any replica, after any reload and in any cluster (whose copy has
// another uid), and a changed spec another one.
func TestCRDObjectKey(t *testing.T) {
	gr := schema.GroupResource{Group: "example.com", Resource: "widgets"}
	v1 := mustCRD(t, crdJSON("example.com", "widgets", "", "v1"))
	again := mustCRD(t, []byte(strings.Replace(string(crdJSON("example.com", "widgets", "", "v1")), `"uid":"u1"`, `"uid":"u2"`, 1)))
	changed := mustCRD(t, crdJSON("example.com", "widgets", "", "v1", "v2"))
	inv := newCluster(nil, nil, crdIndex([]*CRD{v1}), time.Time{})
	obj, key, ok := inv.CRDObject(gr)
	if !ok || string(obj) != string(v1.Object) || key == "" {
		t.Fatalf("CRDObject = %s, %q, %v", obj, key, ok)
	}
	if again.key != key {
		t.Errorf("the same CRD spec in another cluster has keys %q and %q", key, again.key)
	}
	if changed.key == key {
		t.Errorf("a changed CRD keeps the key %q", key)
	}
	if _, _, ok := inv.CRDObject(schema.GroupResource{Group: "example.com", Resource: "gadgets"}); ok {
		t.Error("CRDObject of a CRD never uploaded")
	}
}
