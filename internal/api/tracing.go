package api

import (
	"net/http"
	"strconv"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

var serverSpan = []trace.SpanStartOption{trace.WithSpanKind(trace.SpanKindServer)}

// traced wraps a route in a server span named as the HTTP semantic
// conventions say, "GET /api/v1/tenants/{tenant}/clusters", joined to the
// caller's trace when it sends a traceparent. Without a Tracer it adds
// nothing.
func (s *Server) traced(method, path string, next http.Handler) http.Handler {
	if s.Tracer == nil {
		return next
	}
	name := method + " " + path
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx := r.Context()
		if s.Propagator != nil {
			ctx = s.Propagator.Extract(ctx, propagation.HeaderCarrier(r.Header))
		}
		ctx, span := s.Tracer.Start(ctx, name, serverSpan...)
		defer span.End()
		sw := &statusWriter{ResponseWriter: w, code: http.StatusOK}
		next.ServeHTTP(sw, r.WithContext(ctx))
		if !span.IsRecording() {
			return
		}
		span.SetAttributes(
			attribute.String("http.request.method", method),
			attribute.String("http.route", path),
			attribute.String("url.scheme", "https"),
			attribute.String("server.address", r.Host),
			attribute.Int("http.response.status_code", sw.code),
		)
		if sw.code >= 500 {
			span.SetAttributes(attribute.String("error.type", strconv.Itoa(sw.code)))
			span.SetStatus(codes.Error, http.StatusText(sw.code))
		}
	})
}

// statusWriter remembers the status code a handler wrote.
type statusWriter struct {
	http.ResponseWriter
	code  int
	wrote bool
}

func (w *statusWriter) WriteHeader(code int) {
	if !w.wrote {
		w.code, w.wrote = code, true
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	w.wrote = true
	return w.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController reach the real writer (flushes,
// deadlines).
func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
