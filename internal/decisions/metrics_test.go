package decisions

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil/promlint"
)

// The recorder's metrics, under the names the dashboards use, pass promlint.
func TestMetricsNamesAndLint(t *testing.T) {
	reg := prometheus.NewRegistry()
	newRecorderMetrics(reg, func() float64 { return 0 }, func() float64 { return 0 })
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, mf := range mfs {
		names[mf.GetName()] = true
	}
	for _, n := range []string{"portcullis_decisions_queued_total", "portcullis_decisions_written_total",
		"portcullis_decisions_spilled_total", "portcullis_decisions_replayed_total", "portcullis_decisions_dropped_total",
		"portcullis_decisions_queue_depth", "portcullis_decisions_spill_bytes", "portcullis_decisions_batch_seconds"} {
		if !names[n] {
			t.Errorf("%s not registered", n)
		}
	}
	problems, err := promlint.NewWithMetricFamilies(mfs).Lint()
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("promlint: %s: %s", p.Metric, p.Text)
	}
}
