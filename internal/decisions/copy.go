package decisions

import (
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// copySQL starts a binary COPY of the columns copyReader writes.
var copySQL = func() string {
	quoted := make([]string, len(columns))
	for i, c := range columns {
		quoted[i] = pgx.Identifier{c}.Sanitize()
	}
	return fmt.Sprintf("COPY %s (%s) FROM STDIN (FORMAT binary)",
		pgx.Identifier{"decisions"}.Sanitize(), strings.Join(quoted, ", "))
}()

// copyRows writes a batch with one binary COPY, and its counts, in one
// transaction. The rows are encoded straight from the decisions as pgconn
// reads them: pgx's CopyFrom took 33 boxed values per row (about 1.7 KB
// in 29 allocations) and encoded each through its type map, on the
// gateway's one P.
func copyRows(ctx context.Context, pool *pgxpool.Pool, batch []*Decision) error {
	return pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		r := newCopyReader(batch)
		_, err := tx.Conn().PgConn().CopyFrom(ctx, r, copySQL)
		// pgconn may return before its reading goroutine does; after close no
		// Read touches the buffer, and it can be reused.
		if encErr := r.close(); encErr != nil {
			// The server only echoes it as "COPY from stdin failed".
			return encErr
		}
		if err != nil {
			return err
		}
		return addCounts(ctx, tx, batch)
	})
}

// copyReader is the binary COPY stream of a batch, encoded on demand.
//
// Encoding a batch takes milliseconds of CPU at full load. On a gateway
// with few cores (the benchmark runs it with GOMAXPROCS=1) that would hold
// back the webhook requests arriving meanwhile and show in the latency
// tail: a decision can wait for storage, a request should not. So the
// reader pauses after every workSlice of encoding. It sleeps rather than
// calling runtime.Gosched: Go's scheduler polls the network only when no
// goroutine is runnable (or from sysmon, every 10ms), so a goroutine that
// only yields keeps the bytes of arriving requests unread. While it
// sleeps, the scheduler reads them; on an idle process the pause lasts
// about a millisecond (the poller's resolution), which a batch can afford.
type copyReader struct {
	mu     sync.Mutex
	closed bool
	batch  []*Decision
	i      int // next row
	state  int // copyHeader, copyBody, copyDone
	buf    []byte
	off    int // start of the bytes not read yet
	err    error
	slice  time.Time     // start of the current slice of work
	worked time.Duration // of the current slice, when no Read runs
}

const (
	workSlice = 500 * time.Microsecond
	pause     = 20 * time.Microsecond
)

const (
	copyHeader = iota
	copyBody
	copyDone
)

// copyBufs keeps the readers' buffers, about 64 KiB each (pgconn reads
// that much at a time), between batches.
var copyBufs = sync.Pool{New: func() any { return new([]byte) }}

func newCopyReader(batch []*Decision) *copyReader {
	return &copyReader{batch: batch, buf: (*copyBufs.Get().(*[]byte))[:0]}
}

// Read implements io.Reader.
func (r *copyReader) Read(p []byte) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return 0, io.ErrClosedPipe
	}
	// Only time spent encoding counts towards a slice: between reads,
	// pgconn writes to the socket, and the network is polled anyway.
	r.slice = time.Now().Add(-r.worked)
	defer func() { r.worked = time.Since(r.slice) }()
	if len(r.buf)-r.off < len(p) && r.off > 0 {
		// Move what the last read left to the front, once per refill
		// (not per read: a row larger than p is served in pieces).
		r.buf = r.buf[:copy(r.buf, r.buf[r.off:])]
		r.off = 0
	}
	for len(r.buf)-r.off < len(p) && r.state != copyDone && r.err == nil {
		r.encodeNext()
	}
	if r.err != nil {
		return 0, r.err
	}
	if len(r.buf) == r.off {
		return 0, io.EOF
	}
	n := copy(p, r.buf[r.off:])
	r.off += n
	return n, nil
}

func (r *copyReader) encodeNext() {
	switch {
	case r.state == copyHeader:
		r.buf = append(r.buf, "PGCOPY\n\377\r\n\000"...)
		r.buf = binary.BigEndian.AppendUint32(r.buf, 0) // flags
		r.buf = binary.BigEndian.AppendUint32(r.buf, 0) // header extension length
		r.state = copyBody
	case r.i < len(r.batch):
		if time.Since(r.slice) >= workSlice {
			time.Sleep(pause)
			r.slice = time.Now()
		}
		d := r.batch[r.i]
		r.i++
		var err error
		if r.buf, err = appendRow(r.buf, d); err != nil {
			r.err = fmt.Errorf("decision %s: %w", d.ID, err)
		}
	default:
		r.buf = binary.BigEndian.AppendUint16(r.buf, 0xffff) // trailer: -1
		r.state = copyDone
	}
}

// close stops further reads, returns the buffer for reuse and returns the
// encoding error, if any.
func (r *copyReader) close() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.closed {
		r.closed = true
		if cap(r.buf) <= 1<<20 { // not one kept for a giant row
			b := r.buf[:0]
			copyBufs.Put(&b)
		}
		r.buf = nil
	}
	return r.err
}

// appendRow appends d as one tuple of the binary COPY format, with the
// values row gives it (TestCopyRowMatchesPgx).
func appendRow(b []byte, d *Decision) ([]byte, error) {
	id, err := uuid.Parse(d.ID)
	if err != nil {
		return b, err
	}
	recs := bindingRecords(d.Bindings)
	policies, deniedBy, mutatedBy, fpa := summarize(recs)

	rowStart := len(b)
	b = binary.BigEndian.AppendUint16(b, uint16(len(columns)))
	b = appendBytes(b, id[:])
	b = appendInt64(b, timestamptz(d.Time))
	b = appendInt64(b, d.TenantID)
	b = appendText(b, clean(d.TenantName))
	b = appendInt64(b, d.ClusterID)
	b = appendText(b, clean(d.ClusterName))
	b = appendText(b, clean(d.UID))
	b = appendText(b, clean(d.Operation))
	b = appendText(b, clean(d.Group))
	b = appendText(b, clean(d.Version))
	b = appendText(b, clean(d.Resource))
	b = appendText(b, clean(d.SubResource))
	b = appendText(b, clean(d.Kind))
	b = appendText(b, clean(d.Namespace))
	b = appendText(b, clean(d.Name))
	b = appendText(b, clean(d.UserName))
	b = appendTextArray(b, d.UserGroups, true)
	b = appendBool(b, d.DryRun)
	b = appendText(b, string(d.Verdict))
	b = appendInt32(b, int32(d.HTTPStatus))
	b = appendInt32(b, d.Code)
	b = appendText(b, clean(d.Reason))
	b = appendText(b, clean(d.Message))
	b = appendTextArray(b, d.Warnings, true)

	start := len(b)
	b = append(b, 0, 0, 0, 0, 1) // length, jsonb version 1
	b = appendAnnotationsJSON(b, d.AuditAnnotations)
	binary.BigEndian.PutUint32(b[start:], uint32(len(b)-start-4))
	start = len(b)
	b = append(b, 0, 0, 0, 0, 1)
	b = appendBindingsJSON(b, recs)
	binary.BigEndian.PutUint32(b[start:], uint32(len(b)-start-4))

	b = appendTextArray(b, policies, false) // clean already
	b = appendTextArray(b, deniedBy, false)
	b = appendBool(b, fpa)
	b = appendBool(b, d.TimedOut)
	b = appendInt64(b, int64(math.Float64bits(float64(d.Latency)/float64(time.Millisecond))))
	b = appendText(b, clean(d.Instance))
	b = appendInt64(b, d.SnapshotVersion)
	b = appendText(b, endpoint(d))
	b = appendBool(b, len(d.Patch) > 0)
	b = appendTextArray(b, mutatedBy, false)
	patch, cut := storedPatch(d.Patch)
	cut = cut || d.PatchTruncated
	b = appendBytes(b, cleanBytes(patch))
	b = appendBool(b, cut)
	if len(b)-rowStart > maxRow {
		// A field this long would overflow its int32 length.
		return b[:rowStart], fmt.Errorf("the row is %d bytes, more than PostgreSQL stores (%d)", len(b)-rowStart, maxRow)
	}
	return b, nil
}

// maxRow is PostgreSQL's limit for one field, and so a bound that keeps
// every field's int32 length from overflowing.
const maxRow = 1 << 30

// timestamptz is t in microseconds since 2000-01-01 UTC, the sub-microsecond
// part dropped as pgx does.
func timestamptz(t time.Time) int64 {
	const y2k = 946_684_800 * 1_000_000 // µs from the Unix epoch
	return t.Unix()*1_000_000 + int64(t.Nanosecond())/1000 - y2k
}

func appendBytes(b, v []byte) []byte {
	b = binary.BigEndian.AppendUint32(b, uint32(len(v)))
	return append(b, v...)
}

func appendText(b []byte, s string) []byte {
	b = binary.BigEndian.AppendUint32(b, uint32(len(s)))
	return append(b, s...)
}

func appendInt64(b []byte, v int64) []byte {
	b = binary.BigEndian.AppendUint32(b, 8)
	return binary.BigEndian.AppendUint64(b, uint64(v))
}

func appendInt32(b []byte, v int32) []byte {
	b = binary.BigEndian.AppendUint32(b, 4)
	return binary.BigEndian.AppendUint32(b, uint32(v))
}

func appendBool(b []byte, v bool) []byte {
	b = binary.BigEndian.AppendUint32(b, 1)
	if v {
		return append(b, 1)
	}
	return append(b, 0)
}

// appendTextArray appends ss as a one-dimensional text[], each element
// cleaned if dirty is set. An empty (or nil) ss has one dimension of
// length 0, as pgx writes it; PostgreSQL stores that as the empty array.
func appendTextArray(b []byte, ss []string, dirty bool) []byte {
	const textOID = 25
	start := len(b)
	b = append(b, 0, 0, 0, 0)               // length
	b = binary.BigEndian.AppendUint32(b, 1) // dimensions
	b = binary.BigEndian.AppendUint32(b, 0) // no NULL
	b = binary.BigEndian.AppendUint32(b, textOID)
	b = binary.BigEndian.AppendUint32(b, uint32(len(ss)))
	b = binary.BigEndian.AppendUint32(b, 1) // lower bound
	for _, s := range ss {
		if dirty {
			s = clean(s)
		}
		b = appendText(b, s)
	}
	binary.BigEndian.PutUint32(b[start:], uint32(len(b)-start-4))
	return b
}
