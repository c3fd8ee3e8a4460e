package decisions

import (
	"bytes"
	"context"
	"encoding/binary"
	"io"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
)

// columnOIDs are the types of the decisions table's columns, by name.
var columnOIDs = map[string]uint32{
	"id": pgtype.UUIDOID, "time": pgtype.TimestamptzOID,
	"tenant_id": pgtype.Int8OID, "cluster_id": pgtype.Int8OID, "snapshot_version": pgtype.Int8OID,
	"user_groups": pgtype.TextArrayOID, "warnings": pgtype.TextArrayOID,
	"policies": pgtype.TextArrayOID, "denied_by": pgtype.TextArrayOID,
	"dry_run": pgtype.BoolOID, "failure_policy_applied": pgtype.BoolOID, "timed_out": pgtype.BoolOID,
	"mutated": pgtype.BoolOID, "patch_truncated": pgtype.BoolOID, "mutated_by": pgtype.TextArrayOID,
	"http_status": pgtype.Int4OID, "code": pgtype.Int4OID,
	"audit_annotations": pgtype.JSONBOID, "bindings": pgtype.JSONBOID,
	"latency_ms": pgtype.Float8OID,
}

func columnOID(c string) uint32 {
	if oid, ok := columnOIDs[c]; ok {
		return oid
	}
	return pgtype.TextOID
}

// copyOracleDecisions are decisions with every kind of awkward value.
func copyOracleDecisions() []*Decision {
	tricky := []string{"", "plain", "a\x00b", "\x00", "bad\xffutf8\xc3", "ünï€😀", `quo"te\`, "new\nline\ttab", "\u2028", strings.Repeat("long ", 2000)}
	ds := benchDecisions(8)
	now := time.Now()
	for i, s := range tricky {
		d := denied(decision(now), s)
		d.TenantName, d.ClusterName, d.UID, d.Operation, d.Group, d.Version = s, s, s, s, s, s
		d.Resource, d.SubResource, d.Kind, d.Namespace, d.Name, d.UserName = s, s, s, s, s, s
		d.Reason, d.Message, d.Instance = s, s, s
		d.UserGroups = []string{s, "", s + "x"}
		d.Warnings = tricky[:i]
		d.AuditAnnotations = []AuditAnnotation{{Key: s, Value: s}, {Key: "k", Value: s}}
		d.Bindings = append(d.Bindings, BindingRecord{Policy: s, Binding: s, Param: s, Outcome: "Error",
			FailurePolicyApplied: i%2 == 0, Timeout: true, Error: s, Messages: []string{s}, Mutated: i%2 == 1, Reinvoked: i%3 == 0})
		d.Endpoint, d.Patch = s, []byte(s)
		ds = append(ds, d)
	}
	nilSlices := decision(now)
	nilSlices.UserGroups, nilSlices.Warnings, nilSlices.Bindings, nilSlices.AuditAnnotations = nil, nil, nil, nil
	empty := decision(now)
	empty.UserGroups, empty.Warnings, empty.Bindings, empty.AuditAnnotations = []string{}, []string{}, []BindingRecord{}, []AuditAnnotation{}
	many := decision(now)
	for i := range 300 {
		p := "p" + strings.Repeat("x", i%7)
		many.Bindings = append(many.Bindings, BindingRecord{Policy: p, Binding: p, Outcome: "Violation", Denied: i%3 == 0})
		many.UserGroups = append(many.UserGroups, p)
	}
	// Every text field different, so that two columns swapped show.
	distinct := decision(now)
	distinct.TenantName, distinct.ClusterName, distinct.UID, distinct.Operation = "tenant", "cluster", "uid", "UPDATE"
	distinct.Group, distinct.Version, distinct.Resource, distinct.SubResource = "apps", "v1", "deployments", "scale"
	distinct.Kind, distinct.Namespace, distinct.Name, distinct.UserName = "Scale", "ns", "name", "user"
	distinct.Reason, distinct.Message, distinct.Instance = "reason", "message", "instance"
	distinct.DryRun, distinct.TimedOut = true, false
	// Patches at the bound and past it, cut in the middle of a character.
	mutated := decision(now)
	mutated.Endpoint = EndpointMutate
	mutated.Bindings = []BindingRecord{{Policy: "m", Binding: "m", Outcome: "Pass", Mutated: true}, {Policy: "m", Binding: "n", Outcome: "Pass", Mutated: true, Reinvoked: true}}
	mutated.Patch = []byte(`[{"op":"add","path":"/metadata/labels/team","value":"a"}]`)
	atBound, cut := decision(now), decision(now)
	atBound.Endpoint, atBound.Patch = EndpointMutate, bytes.Repeat([]byte("x"), MaxPatchBytes)
	cut.Endpoint, cut.Patch = EndpointMutate, append(bytes.Repeat([]byte("x"), MaxPatchBytes-1), "€€"...)
	// Cut by SetPatch before it reached the recorder.
	preCut := decision(now)
	preCut.Endpoint, preCut.Patch, preCut.PatchTruncated = EndpointMutate, []byte(`[{"op":"add"`), true
	ds = append(ds, nilSlices, empty, many, distinct, mutated, atBound, cut, preCut)
	for i, t := range []time.Time{
		{}, // zero: year 1
		time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC),
		time.Date(1999, 12, 31, 23, 59, 59, 999_999_999, time.UTC),
		time.Date(1969, 12, 31, 23, 59, 59, 1, time.UTC),
		time.Date(1, 1, 1, 0, 0, 0, 1_500, time.UTC),
		time.Date(9999, 12, 31, 23, 59, 59, 999_999_999, time.UTC),
		time.Date(200000, 6, 1, 0, 0, 0, 123_456_789, time.UTC),
		time.Date(2026, 3, 29, 2, 30, 0, 999, time.FixedZone("x", -7*3600)),
		now, // with a monotonic reading
	} {
		d := decision(now)
		d.Time = t
		d.Latency, d.HTTPStatus, d.Code = time.Duration(t.Nanosecond()), -1<<31, 1<<31-1
		d.TenantID, d.ClusterID, d.SnapshotVersion = -1<<63, 1<<63-1, -7
		d.DryRun, d.TimedOut = i%2 == 0, i%2 == 1
		d.Verdict = Verdict("odd\x00verdict") // written as it is, as row does
		ds = append(ds, d)
	}
	return ds
}

// TestCopyRowMatchesPgx: every field appendRow writes is what pgx's own
// binary encoding of row's value for that column is.
func TestCopyRowMatchesPgx(t *testing.T) {
	m := pgtype.NewMap()
	for n, d := range copyOracleDecisions() {
		values, err := row(d)
		if err != nil {
			t.Fatal(err)
		}
		tuple, err := appendRow([]byte("prefix"), d)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.HasPrefix(tuple, []byte("prefix")) {
			t.Fatal("appendRow did not append")
		}
		fields := splitTuple(t, tuple[len("prefix"):])
		if len(fields) != len(columns) {
			t.Fatalf("decision %d: %d fields, want %d", n, len(fields), len(columns))
		}
		for i, c := range columns {
			want, err := m.Encode(columnOID(c), pgtype.BinaryFormatCode, values[i], nil)
			if err != nil {
				t.Fatalf("pgx encoding %s: %v", c, err)
			}
			if !bytes.Equal(fields[i], want) {
				t.Errorf("decision %d column %s:\n got % x\nwant % x", n, c, trim(fields[i]), trim(want))
			}
		}
	}
}

func trim(b []byte) []byte { return b[:min(len(b), 64)] }

// splitTuple returns the fields of one binary COPY tuple, which must be
// all of b.
func splitTuple(t *testing.T, b []byte) [][]byte {
	t.Helper()
	if len(b) < 2 {
		t.Fatal("no field count")
	}
	n := int(int16(binary.BigEndian.Uint16(b)))
	b = b[2:]
	var fields [][]byte
	for range n {
		if len(b) < 4 {
			t.Fatal("truncated field length")
		}
		l := int(int32(binary.BigEndian.Uint32(b)))
		if l < 0 || len(b) < 4+l {
			t.Fatalf("field length %d, %d bytes left", l, len(b)-4)
		}
		fields = append(fields, b[4:4+l])
		b = b[4+l:]
	}
	if len(b) != 0 {
		t.Fatalf("%d bytes after the last field", len(b))
	}
	return fields
}

// TestCopyReaderStream: whatever the size of the reads, the stream is the
// header, each row and the trailer.
func TestCopyReaderStream(t *testing.T) {
	ds := copyOracleDecisions()
	want := append([]byte("PGCOPY\n\xff\r\n\x00"), 0, 0, 0, 0, 0, 0, 0, 0)
	for _, d := range ds {
		var err error
		if want, err = appendRow(want, d); err != nil {
			t.Fatal(err)
		}
	}
	want = append(want, 0xff, 0xff)
	for _, size := range []int{1, 7, 100, 4096, 65531, 1 << 20} {
		r := newCopyReader(ds)
		var got []byte
		p := make([]byte, size)
		for {
			n, err := r.Read(p)
			got = append(got, p[:n]...)
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			if n == 0 {
				t.Fatalf("read %d: no bytes and no error", size)
			}
		}
		if err := r.close(); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("reads of %d: a stream of %d bytes, want %d", size, len(got), len(want))
		}
		if n, err := r.Read(p); n != 0 || err == nil {
			t.Fatalf("read after close: %d, %v", n, err)
		}
	}
	// Without rows: the header and the trailer.
	r := newCopyReader(nil)
	got, err := io.ReadAll(r)
	if err != nil || !bytes.Equal(got, append(want[:19:19], 0xff, 0xff)) {
		t.Fatalf("empty batch: % x, %v", got, err)
	}
}

// A decision appendRow refuses stops the stream with its error.
func TestCopyReaderError(t *testing.T) {
	bad := decision(time.Now())
	bad.ID = "not-a-uuid"
	r := newCopyReader([]*Decision{decision(time.Now()), bad})
	_, err := io.ReadAll(r)
	if err == nil || !strings.Contains(err.Error(), "not-a-uuid") {
		t.Fatalf("error %v, want one naming the decision", err)
	}
	if cerr := r.close(); cerr != err {
		t.Fatalf("close returned %v, want %v", cerr, err)
	}
}

func TestCopySQL(t *testing.T) {
	if !strings.HasPrefix(copySQL, `COPY "decisions" ("id", "time", "tenant_id", `) ||
		!strings.HasSuffix(copySQL, `"instance", "snapshot_version", "endpoint", "mutated", "mutated_by", "patch", "patch_truncated") FROM STDIN (FORMAT binary)`) {
		t.Fatal(copySQL)
	}
}

// Beyond what bindingRecords, summarize and the JSON need, a row costs no
// allocation.
func TestCopyRowAllocations(t *testing.T) {
	d := denied(decision(time.Now()), "no-latest")
	d.AuditAnnotations = []AuditAnnotation{{Key: "k", Value: "v"}}
	d.Warnings = []string{"w"}
	buf := make([]byte, 0, 64<<10)
	var err error
	got := testing.AllocsPerRun(100, func() {
		if _, err = appendRow(buf, d); err != nil {
			t.Fatal(err)
		}
	})
	ref := testing.AllocsPerRun(100, func() {
		_, _, _, _ = summarize(bindingRecords(d.Bindings))
	})
	if got > ref {
		t.Errorf("%v allocations per row, bindingRecords and summarize alone %v", got, ref)
	}
}

// The awkward decisions reach PostgreSQL as row gives them; a decision
// that cannot be encoded fails its batch with its own error and leaves
// the connection usable.
func TestCopyBatchStoresAwkwardRows(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	var ds []*Decision
	for _, d := range copyOracleDecisions() {
		if time.Since(d.Time) < time.Hour {
			normalize(d)
			ds = append(ds, d)
		}
	}
	bad := decision(time.Now())
	bad.ID = "not-a-uuid"
	if err := copyBatch(ctx, f.pool, ds[:1]); err != nil { // a connection to reuse
		t.Fatal(err)
	}
	opened := f.pool.Stat().NewConnsCount()
	for range 3 {
		err := copyBatch(ctx, f.pool, append(ds[1:2:2], bad))
		if err == nil || !strings.Contains(err.Error(), "not-a-uuid") {
			t.Fatalf("error %v, want one naming the decision", err)
		}
	}
	// The COPY was refused cleanly: the same connection serves again.
	if n := f.pool.Stat().NewConnsCount(); n != opened {
		t.Errorf("%d connections opened by the failed batches, want none", n-opened)
	}
	if err := copyBatch(ctx, f.pool, ds[1:]); err != nil {
		t.Fatal(err)
	}
	if n, _ := f.rows(t); n != len(ds) {
		t.Fatalf("%d rows stored, want %d", n, len(ds))
	}
	for _, d := range ds {
		values, err := row(d)
		if err != nil {
			t.Fatal(err)
		}
		var groups, warnings, policies []string
		var message string
		var latency float64
		var bindings []BindingRecord
		err = f.pool.QueryRow(ctx, `SELECT user_groups, warnings, policies, message, latency_ms, bindings FROM decisions WHERE id = $1`, d.ID).
			Scan(&groups, &warnings, &policies, &message, &latency, &bindings)
		if err != nil {
			t.Fatal(err)
		}
		// The text columns, by name, as row gives them.
		for i, c := range columns {
			if columnOID(c) != pgtype.TextOID {
				continue
			}
			var got string
			if err := f.pool.QueryRow(ctx, `SELECT `+pgx.Identifier{c}.Sanitize()+` FROM decisions WHERE id = $1`, d.ID).Scan(&got); err != nil {
				t.Fatal(err)
			}
			if got != values[i] {
				t.Fatalf("decision %s: %s = %q, want %q", d.ID, c, got, values[i])
			}
		}
		if !slices.Equal(groups, values[16].([]string)) || !slices.Equal(warnings, values[23].([]string)) ||
			!slices.Equal(policies, values[26].([]string)) || message != values[22] || latency != values[30] ||
			!reflect.DeepEqual(bindings, bindingRecords(d.Bindings)) {
			t.Fatalf("decision %s stored as %q %q %q %q %v %+v", d.ID, groups, warnings, policies, message, latency, bindings)
		}
	}
}

// The CPU and allocations of encoding realistic rows for COPY, without
// the database.
func BenchmarkCopyEncode(b *testing.B) {
	ds := benchDecisions(1000)
	p := make([]byte, 65536-5)
	b.ReportAllocs()
	for b.Loop() {
		r := newCopyReader(ds)
		for {
			if _, err := r.Read(p); err == io.EOF {
				break
			} else if err != nil {
				b.Fatal(err)
			}
		}
		_ = r.close()
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(ds)), "ns/row")
}

// clean's ASCII fast path changes nothing: it gives what replacing NUL and
// then invalid UTF-8 gives.
func TestClean(t *testing.T) {
	for _, s := range []string{"", "abc", "\x7f~ ", "a\x00b", "\x00", "bad\xffutf8", "\x80", "\xc3", "ünï€😀", "a\x00\xff", "\xed\xa0\x80", strings.Repeat("x", 100) + "\x00"} {
		want := strings.ToValidUTF8(strings.ReplaceAll(s, "\x00", ""), "\uFFFD")
		if got := clean(s); got != want {
			t.Errorf("clean(%q) = %q, want %q", s, got, want)
		}
	}
}
