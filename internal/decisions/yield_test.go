package decisions

import (
	"io"
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
// median time between round trips below was 7-8ms. Pausing after each
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
	batch := benchDecisions(256)
	buf := make([]byte, 65536-5) // as pgconn reads
	start := time.Now()
	rows := 0
	for time.Since(start) < encodeFor {
		r := newCopyReader(batch)
		r.slice = start
		for {
			_, err := r.Read(buf)
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
		}
		rows += r.i
		_ = r.close()
	}
	close(done)
	gaps := <-trips
	if len(gaps) < 3 {
		t.Fatalf("%d network round trips while %d rows were encoded", len(gaps), rows)
	}
	slices.Sort(gaps)
	median := gaps[len(gaps)/2]
	t.Logf("%d round trips while %d rows were encoded; median %v apart", len(gaps), rows, median)
	if median > 4*time.Millisecond {
		t.Errorf("network round trips a median %v apart while encoding, want at most 4ms", median)
	}
}
