package decisions

import "github.com/prometheus/client_golang/prometheus"

// recorderMetrics count every decision through the recorder. At rest,
// queued = written + spilled + dropped, and what was spilled is replayed.
type recorderMetrics struct {
	queued, written, spilled, replayed, dropped prometheus.Counter
	batch                                       prometheus.Histogram
}

func newRecorderMetrics(reg prometheus.Registerer, queueDepth, spillBytes func() float64) *recorderMetrics {
	m := &recorderMetrics{
		queued: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "portcullis_decisions_queued_total",
			Help: "Decisions handed to the recorder.",
		}),
		written: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "portcullis_decisions_written_total",
			Help: "Decisions written to the database directly from the queue.",
		}),
		spilled: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "portcullis_decisions_spilled_total",
			Help: "Decisions written to the local spill file, because the database failed or the queue was full.",
		}),
		replayed: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "portcullis_decisions_replayed_total",
			Help: "Decisions inserted into the database from the spill file.",
		}),
		dropped: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "portcullis_decisions_dropped_total",
			Help: "Decisions lost: the spill file could not be written, or a spilled line was unreadable.",
		}),
		batch: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "portcullis_decisions_batch_seconds",
			Help:    "Time to write one batch of decisions to the database.",
			Buckets: []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5},
		}),
	}
	if reg != nil {
		reg.MustRegister(m.queued, m.written, m.spilled, m.replayed, m.dropped, m.batch,
			prometheus.NewGaugeFunc(prometheus.GaugeOpts{
				Name: "portcullis_decisions_queue_depth",
				Help: "Decisions waiting in memory to be written.",
			}, queueDepth),
			prometheus.NewGaugeFunc(prometheus.GaugeOpts{
				Name: "portcullis_decisions_spill_bytes",
				Help: "Bytes of decisions in the local spill file, waiting for replay.",
			}, spillBytes))
	}
	return m
}
