package inventory

import (
	"encoding/json"
	"fmt"
	"runtime"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// The heap one replica holds for a cluster of 10,000 namespaces (the
// default bound), each as a typical namespace is stored: its uid and
// creationTimestamp, five labels, two short annotations, the kubernetes
// finalizer and its phase; decoded from JSON as load decodes them.
// docs/production.md quotes the figure:
//
//	go test -run '^$' -bench HeapPer10kNamespaces -benchtime 3x ./internal/inventory/
func BenchmarkHeapPer10kNamespaces(b *testing.B) {
	const count = 10_000
	docs := make([][]byte, count)
	for i := range docs {
		docs[i] = fmt.Appendf(nil, `{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"team-%05d",
			"uid":"6f1c2d3e-4a5b-4c6d-8e9f-%012d","resourceVersion":"%d","creationTimestamp":"2026-01-02T03:04:05Z",
			"labels":{"kubernetes.io/metadata.name":"team-%05d","env":"prod","team":"team-%d","cost-center":"cc-%d","pod-security.kubernetes.io/enforce":"restricted"},
			"annotations":{"owner":"team-%d@example.com","scheduler.alpha.kubernetes.io/node-selector":"pool=general"}},
			"spec":{"finalizers":["kubernetes"]},"status":{"phase":"Active"}}`, i, i, 1000+i, i, i%97, i%13, i%97)
	}
	var held []*Cluster
	var perRun float64
	for b.Loop() {
		runtime.GC()
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		m := make(map[string]*corev1.Namespace, count)
		for _, js := range docs {
			ns := &corev1.Namespace{}
			if err := json.Unmarshal(js, ns); err != nil {
				b.Fatal(err)
			}
			m[ns.Name] = ns
		}
		inv := newCluster(m, map[string]*corev1.Namespace{}, nil, time.Time{})
		runtime.GC()
		runtime.ReadMemStats(&after)
		held = append(held, inv)
		perRun = float64(after.HeapAlloc - before.HeapAlloc)
	}
	runtime.KeepAlive(held)
	b.ReportMetric(perRun/(1<<20), "MiB/10k-namespaces")
}
