package database

import (
	"context"
	"strings"

	"github.com/jackc/pgx/v5"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
)

// QueryTracer makes a client span of every query and COPY made within a
// traced request (an admin API call, a webhook request loading a tenant's
// policies). Background work (the cache's resync, the decision writer's
// batches outside any request) starts no trace of its own: a root span
// every few seconds per replica would bury the requests'.
//
// The span carries the statement's text, which holds placeholders, never
// the values bound to them.
type QueryTracer struct{ tracer trace.Tracer }

// NewQueryTracer returns a tracer for pgx's ConnConfig.Tracer.
func NewQueryTracer(tp trace.TracerProvider) *QueryTracer {
	return &QueryTracer{tracer: tp.Tracer("github.com/portcullis-dev/portcullis/internal/database")}
}

var clientSpan = []trace.SpanStartOption{trace.WithSpanKind(trace.SpanKindClient)}

func (q *QueryTracer) start(ctx context.Context, name, text string) context.Context {
	if !trace.SpanFromContext(ctx).IsRecording() {
		return ctx
	}
	ctx, span := q.tracer.Start(ctx, name, clientSpan...)
	span.SetAttributes(attribute.String("db.system.name", "postgresql"), attribute.String("db.query.text", text))
	return ctx
}

func end(ctx context.Context, err error) {
	span := trace.SpanFromContext(ctx)
	if !span.IsRecording() {
		return
	}
	if err != nil {
		span.SetStatus(codes.Error, err.Error())
		span.SetAttributes(attribute.String("error.type", "query"))
	}
	span.End()
}

// TraceQueryStart implements pgx.QueryTracer.
func (q *QueryTracer) TraceQueryStart(ctx context.Context, _ *pgx.Conn, data pgx.TraceQueryStartData) context.Context {
	return q.start(ctx, operation(data.SQL), data.SQL)
}

// TraceQueryEnd implements pgx.QueryTracer; ctx is TraceQueryStart's.
func (q *QueryTracer) TraceQueryEnd(ctx context.Context, _ *pgx.Conn, data pgx.TraceQueryEndData) {
	end(ctx, data.Err)
}

// TraceCopyFromStart implements pgx.CopyFromTracer.
func (q *QueryTracer) TraceCopyFromStart(ctx context.Context, _ *pgx.Conn, data pgx.TraceCopyFromStartData) context.Context {
	table := data.TableName.Sanitize()
	return q.start(ctx, "COPY "+table, "COPY "+table+" FROM STDIN")
}

// TraceCopyFromEnd implements pgx.CopyFromTracer.
func (q *QueryTracer) TraceCopyFromEnd(ctx context.Context, _ *pgx.Conn, data pgx.TraceCopyFromEndData) {
	end(ctx, data.Err)
}

// operation is the statement's first keyword (SELECT, INSERT, WITH, ...),
// the span's name: low cardinality, as the conventions want.
func operation(sql string) string {
	sql = strings.TrimSpace(sql)
	for strings.HasPrefix(sql, "--") { // a leading comment line
		_, rest, ok := strings.Cut(sql, "\n")
		if !ok {
			return "query"
		}
		sql = strings.TrimSpace(rest)
	}
	end := strings.IndexAny(sql, " \t\n(;")
	if end < 0 {
		end = len(sql)
	}
	if end == 0 {
		return "query"
	}
	return strings.ToUpper(sql[:end])
}
