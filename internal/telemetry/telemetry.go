// Package telemetry sets up OpenTelemetry tracing. Without an endpoint it
// hands out a no-op provider, so instrumented code pays next to nothing
// when nobody collects its spans.
package telemetry

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"
)

// Config says where spans go.
type Config struct {
	// Endpoint is the OTLP/HTTP collector URL, e.g. http://otel-collector:4318.
	// Without a path, spans are posted to /v1/traces as the OTLP
	// specification says. Empty switches tracing off.
	Endpoint string
	// ServiceName and Instance become the service.name and
	// service.instance.id resource attributes.
	ServiceName string
	Instance    string
	// ExportTimeout bounds one export request; 10s when zero.
	ExportTimeout time.Duration
}

// Tracing is the process's tracer provider and propagator.
type Tracing struct {
	Provider trace.TracerProvider
	// Propagator reads and writes W3C traceparent/tracestate headers.
	Propagator propagation.TextMapPropagator
	sdk        *sdktrace.TracerProvider
}

// Disabled is tracing switched off: a no-op provider that records nothing.
func Disabled() *Tracing {
	return &Tracing{Provider: noop.NewTracerProvider(), Propagator: propagation.TraceContext{}}
}

// ValidateEndpoint checks an --otlp-endpoint value.
func ValidateEndpoint(endpoint string) error {
	_, err := tracesURL(endpoint)
	return err
}

// tracesURL turns a collector base URL into the traces URL.
func tracesURL(endpoint string) (string, error) {
	u, err := url.Parse(endpoint)
	if err != nil {
		return "", err
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", errors.New("want an http:// or https:// URL such as http://otel-collector:4318")
	}
	if u.Path == "" || u.Path == "/" {
		u.Path = "/v1/traces"
	}
	return u.String(), nil
}

// New returns Disabled() without an endpoint, else a provider that batches
// spans to the endpoint over OTLP/HTTP. The sampler follows the standard
// OTEL_TRACES_SAMPLER and OTEL_TRACES_SAMPLER_ARG variables (default:
// follow the caller's sampling decision, sample new traces), and the
// exporter reads OTEL_EXPORTER_OTLP_HEADERS and the other OTLP variables.
func New(cfg Config) (*Tracing, error) {
	if cfg.Endpoint == "" {
		return Disabled(), nil
	}
	target, err := tracesURL(cfg.Endpoint)
	if err != nil {
		return nil, fmt.Errorf("--otlp-endpoint %q: %w", cfg.Endpoint, err)
	}
	timeout := cfg.ExportTimeout
	if timeout <= 0 {
		timeout = 10 * time.Second
	}
	// New dials lazily: an unreachable collector costs dropped spans, never
	// a failed start.
	exp, err := otlptracehttp.New(context.Background(),
		otlptracehttp.WithEndpointURL(target), otlptracehttp.WithTimeout(timeout))
	if err != nil {
		return nil, fmt.Errorf("OTLP exporter: %w", err)
	}
	// resource.NewSchemaless avoids a semconv schema URL that could clash
	// with resource.Default()'s when the SDK is upgraded.
	res, err := resource.Merge(resource.Default(), resource.NewSchemaless(
		attribute.String("service.name", cfg.ServiceName),
		attribute.String("service.instance.id", cfg.Instance),
	))
	if err != nil {
		return nil, fmt.Errorf("trace resource: %w", err)
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res))
	return &Tracing{Provider: tp, Propagator: propagation.TraceContext{}, sdk: tp}, nil
}

// Shutdown flushes the spans still queued and stops the exporter. It is a
// no-op when tracing is off.
func (t *Tracing) Shutdown(ctx context.Context) error {
	if t == nil || t.sdk == nil {
		return nil
	}
	return t.sdk.Shutdown(ctx)
}
