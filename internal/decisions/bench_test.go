package decisions

import (
	"context"
	"syscall"
	"testing"
	"time"
)

// benchDecisions returns n realistic decisions: one in four denied, with
// two bindings, a message and an audit annotation.
func benchDecisions(n int) []*Decision {
	ds := make([]*Decision, n)
	now := time.Now()
	for i := range ds {
		d := decision(now)
		if i%4 == 0 {
			denied(d, "no-latest")
		}
		ds[i] = d
	}
	return ds
}

// How fast the writer empties its queue into PostgreSQL with the default
// batch size: the queue holds every decision, so none spills, and the
// time runs until Close has written the last one. Reports decisions/s.
func BenchmarkRecorderThroughput(b *testing.B) {
	f := newFixture(b)
	r := f.recorder(b, func(c *RecorderConfig) {
		c.QueueSize = b.N
		c.FlushInterval = 200 * time.Millisecond
		c.BatchRows = 0
	})
	ds := benchDecisions(b.N)
	b.ResetTimer()
	start, cpu0 := time.Now(), cpuTime()
	for _, d := range ds {
		r.Record(d)
	}
	if err := r.Close(context.Background()); err != nil {
		b.Fatal(err)
	}
	elapsed, cpu := time.Since(start), cpuTime()-cpu0
	b.StopTimer()
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "decisions/s")
	// What recording adds to the gateway process per request, whatever
	// else runs on the machine (PostgreSQL's own work is not counted).
	b.ReportMetric(float64(cpu.Microseconds())/float64(b.N), "cpu-µs/decision")
	f.checkAllWritten(b, b.N)
}

// The target load: 10,000 decisions/s offered at a steady pace to a
// recorder with the default queue and batch sizes, as the webhook would.
// Every decision must reach PostgreSQL directly: none spilled, none lost.
// Reports the deepest queue seen.
func BenchmarkRecorderSustained10k(b *testing.B) {
	f := newFixture(b)
	r := f.recorder(b, func(c *RecorderConfig) {
		c.QueueSize, c.BatchRows, c.FlushInterval = 0, 0, 200*time.Millisecond
	})
	ds := benchDecisions(b.N)
	const rate = 10_000
	const tick = 10 * time.Millisecond
	perTick := rate * int(tick) / int(time.Second)
	maxDepth := 0
	b.ResetTimer()
	t := time.NewTicker(tick)
	for i := 0; i < len(ds); {
		<-t.C
		for j := 0; j < perTick && i < len(ds); j++ {
			r.Record(ds[i])
			i++
		}
		maxDepth = max(maxDepth, len(r.queue))
	}
	t.Stop()
	if err := r.Close(context.Background()); err != nil {
		b.Fatal(err)
	}
	b.StopTimer()
	b.ReportMetric(float64(maxDepth), "max-queue")
	f.checkAllWritten(b, b.N)
}

func (f *fixture) checkAllWritten(b *testing.B, n int) {
	b.Helper()
	rows, distinct := f.rows(b)
	spilled, dropped := f.counter(b, "portcullis_decisions_spilled_total"), f.counter(b, "portcullis_decisions_dropped_total")
	b.ReportMetric(float64(spilled), "spilled")
	if rows != n || distinct != n || dropped != 0 || spilled != 0 {
		b.Fatalf("%d rows (%d distinct) of %d, spilled %d, dropped %d", rows, distinct, n, spilled, dropped)
	}
}

// cpuTime is the user and system CPU time of this process so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
