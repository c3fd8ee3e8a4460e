package decisions

import (
	"net"
	"runtime"
	"slices"
	"testing"
	"time"
)

// While a large batch is encoded for COPY on a single-P process, requests
// arriving on the network must still be read. A source that only called
// runtime.Gosched would let the network in when sysmon polls it, about
// every 10ms (the scheduler polls it only when nothing is runnable): the
// time between round trips below was 7-11ms. Pausing after each
// slice of work lets one in per slice, about every millisecond.
func TestCopyReaderLetsTheNetworkIn(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() { // echo
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		b := make([]byte, 1)
		for {
			if _, err := c.Read(b); err != nil {
				return
			}
			if _, err := c.Write(b); err != nil {
				return
			}
		}
	}()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()

	const encodeFor = 200 * time.Millisecond
	done := make(chan struct{})
	trips := make(chan []time.Duration)
	go func() { // ping until the encoding is over
		var gaps []time.Duration
		last := time.Now()
		b := make([]byte, 1)
		for {
			select {
			case <-done:
				trips <- gaps
				return
			default:
			}
			if _, err := c.Write(b); err != nil {
				break
			}
			if _, err := c.Read(b); err != nil {
				break
			}
			now := time.Now()
			gaps = append(gaps, now.Sub(last))
			last = now
		}
		<-done
		trips <- gaps
	}()
	// One reader over a batch longer than the test: the pauses must come
	// from its own slices of work, not from starting new readers.
	some := benchDecisions(256)
	batch := make([]*Decision, 4_000_000)
	for i := range batch {
		batch[i] = some[i%len(some)]
	}
	buf := make([]byte, 65536-5) // as pgconn reads
	r := newCopyReader(batch)
	start := time.Now()
	for time.Since(start) < encodeFor {
		if _, err := r.Read(buf); err != nil {
			t.Fatal(err) // the batch outlasts the test
		}
	}
	rows := r.i
	_ = r.close()
	close(done)
	gaps := <-trips
	if len(gaps) < 10 {
		t.Fatalf("%d network round trips while %d rows were encoded", len(gaps), rows)
	}
	slices.Sort(gaps)
	p90 := gaps[len(gaps)*9/10]
	t.Logf("%d round trips while %d rows were encoded; 90%% within %v", len(gaps), rows, p90)
	if p90 > 4*time.Millisecond {
		t.Errorf("90%% of network round trips within %v of the last while encoding, want at most 4ms", p90)
	}
}
