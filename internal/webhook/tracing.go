package webhook

import (
	"context"
	"net/http"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/portcullis-dev/portcullis/internal/decisions"
)

var (
	noopTracer = noop.NewTracerProvider().Tracer("")
	// Built once: a fresh option slice per request would allocate even
	// when tracing is off.
	serverSpanOptions = []trace.SpanStartOption{trace.WithSpanKind(trace.SpanKindServer)}
)

// notRecording is the span of a step not traced. Its End does nothing.
var notRecording = trace.SpanFromContext(context.Background())

// startStep starts a child span of the request span in ctx. When that span
// records nothing (tracing off, or the trace not sampled) no child would
// either: skip them, and the context each one would allocate.
func (h *Handler) startStep(ctx context.Context, name string) (context.Context, trace.Span) {
	if !trace.SpanFromContext(ctx).IsRecording() {
		return ctx, notRecording
	}
	return h.tracer().Start(ctx, name)
}

func (h *Handler) tracer() trace.Tracer {
	if h.Tracer == nil {
		return noopTracer
	}
	return h.Tracer
}

// startRequestSpan starts the server span, as a child of the caller's
// traceparent when there is one.
func (h *Handler) startRequestSpan(r *http.Request) (context.Context, trace.Span) {
	ctx := r.Context()
	// Looked up by its canonical key first: the propagator's Header.Get
	// would canonicalise "traceparent" into a new string on every request,
	// and without that header there is no parent to extract.
	if h.Propagator != nil && len(r.Header["Traceparent"]) > 0 {
		ctx = h.Propagator.Extract(ctx, propagation.HeaderCarrier(r.Header))
	}
	// A constant name: building "POST /t/{tenant}/validate" would allocate
	// on every request, traced or not. The route is an attribute instead.
	ctx, span := h.tracer().Start(ctx, "webhook", serverSpanOptions...)
	if span.IsRecording() {
		span.SetAttributes(
			attribute.String("http.request.method", r.Method),
			attribute.String("http.route", r.Pattern),
			attribute.String("portcullis.endpoint", h.endpoint()),
		)
	}
	return ctx, span
}

// endRequestSpan describes the answer on the server span. Only a recording
// span gets attributes, so that a no-op one costs nothing more.
func endRequestSpan(span trace.Span, d *decisions.Decision) {
	if span.IsRecording() {
		span.SetAttributes(
			attribute.Int("http.response.status_code", d.HTTPStatus),
			attribute.String("portcullis.tenant", d.TenantName),
			attribute.String("portcullis.cluster", d.ClusterName),
			attribute.String("portcullis.operation", d.Operation),
			attribute.String("portcullis.verdict", string(d.Verdict)),
			attribute.String("portcullis.decision_id", d.ID),
			attribute.String("k8s.admission.uid", d.UID),
		)
		if d.HTTPStatus >= 500 {
			span.SetStatus(codes.Error, d.Message)
		}
	}
	span.End()
}

// endStep ends a child span, marking it failed when err is set.
func endStep(span trace.Span, err error) {
	if err != nil && span.IsRecording() {
		span.SetStatus(codes.Error, err.Error())
	}
	span.End()
}
