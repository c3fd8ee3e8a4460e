package decisions

import (
	"io"
	"net"
	"runtime"
	"slices"
	"testing"
	"time"
)

// The reader pauses once a slice of encoding work is used up, and starts
// a new slice after the pause; within a slice it does not pause. The
// slice start is set rather than waited for, so that nothing here depends
// on how fast the machine is.
func TestCopyReaderPausesAfterASliceOfWork(t *testing.T) {
	r := newCopyReader(benchDecisions(4))
	defer r.close()
	r.encodeNext() // the header
	used := time.Now().Add(-2 * workSlice)
	r.slice = used
	r.encodeNext()
	if !r.slice.After(used) {
		t.Fatal("a used-up slice of work did not end in a pause and a new slice")
	}
	fresh := time.Now().Add(time.Hour) // not used up, however slow the machine
	r.slice = fresh
	r.encodeNext()
	if !r.slice.Equal(fresh) {
		t.Fatal("the reader paused within a slice of work")
	}
	if r.i != 2 {
		t.Fatalf("%d rows encoded, want 2", r.i)
	}
}

// While a large batch is encoded for COPY on a single-P process, requests
// arriving on the network must still be read. A source that only called
// runtime.Gosched would let the network in when sysmon polls it, about
// every 10ms (the scheduler polls it only when nothing is runnable): the
// time between round trips measured here was 7-11ms. Pausing after each
// slice of work lets one in per slice, about every millisecond.
//
// One op is one row encoded; gap-p90-µs is the 90th percentile of the
// time between echo round trips made meanwhile over loopback.
func BenchmarkCopyReaderNetworkGap(b *testing.B) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	defer ln.Close()
	go func() { // echo
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		buf := make([]byte, 1)
		for {
			if _, err := c.Read(buf); err != nil {
				return
			}
			if _, err := c.Write(buf); err != nil {
				return
			}
		}
	}()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()

	// One reader over the whole batch: the pauses must come from its own
	// slices of work, not from starting new readers.
	some := benchDecisions(256)
	batch := make([]*Decision, b.N)
	for i := range batch {
		batch[i] = some[i%len(some)]
	}
	buf := make([]byte, 65536-5) // as pgconn reads
	r := newCopyReader(batch)

	done := make(chan struct{})
	trips := make(chan []time.Duration)
	go func() { // ping until the encoding is over
		var gaps []time.Duration
		last := time.Now()
		ping := make([]byte, 1)
		for {
			select {
			case <-done:
				trips <- gaps
				return
			default:
			}
			if _, err := c.Write(ping); err != nil {
				break
			}
			if _, err := c.Read(ping); err != nil {
				break
			}
			now := time.Now()
			gaps = append(gaps, now.Sub(last))
			last = now
		}
		<-done
		trips <- gaps
	}()

	b.ResetTimer()
	for {
		if _, err := r.Read(buf); err == io.EOF {
			break
		} else if err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	_ = r.close()
	close(done)
	gaps := <-trips
	b.ReportMetric(float64(len(gaps)), "round-trips")
	if len(gaps) > 0 {
		slices.Sort(gaps)
		b.ReportMetric(float64(gaps[len(gaps)*9/10].Microseconds()), "gap-p90-µs")
	}
}
