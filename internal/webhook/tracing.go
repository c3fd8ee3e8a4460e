package webhook

import (
	"context"
	"net"
	"net/http"
	"strconv"

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
	// Started under a constant name, renamed only when it records: building
	// "POST /t/{tenant}/validate" (the HTTP semantic conventions' name, the
	// method and the route pattern, which never holds a URL secret) would
	// otherwise allocate on every request, traced or not.
	ctx, span := h.tracer().Start(ctx, "webhook", serverSpanOptions...)
	if span.IsRecording() {
		if r.Pattern != "" {
			span.SetName(r.Method + " " + r.Pattern)
		} else {
			span.SetName(r.Method) // the conventions' name without a route
		}
		host, port := splitHostPort(r.Host)
		span.SetAttributes(
			attribute.String("http.request.method", r.Method),
			attribute.String("http.route", r.Pattern),
			attribute.String("url.scheme", "https"),
			attribute.String("server.address", host),
			attribute.String("network.protocol.version", protocolVersion(r)),
			attribute.String("portcullis.endpoint", h.endpoint()),
		)
		if port > 0 {
			span.SetAttributes(attribute.Int("server.port", port))
		}
		if ua := r.UserAgent(); ua != "" {
			span.SetAttributes(attribute.String("user_agent.original", ua))
		}
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
			// error.type: the status code, as the HTTP conventions say
			// when no more specific type is known.
			span.SetAttributes(attribute.String("error.type", strconv.Itoa(d.HTTPStatus)))
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

// splitHostPort reads the Host header as server.address and server.port.
func splitHostPort(hostport string) (string, int) {
	host, p, err := net.SplitHostPort(hostport)
	if err != nil {
		return hostport, 0
	}
	port, _ := strconv.Atoi(p)
	return host, port
}

func protocolVersion(r *http.Request) string {
	if r.ProtoMajor == 2 {
		return "2"
	}
	return strconv.Itoa(r.ProtoMajor) + "." + strconv.Itoa(r.ProtoMinor)
}
