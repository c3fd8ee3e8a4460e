// Package telemetry sets up OpenTelemetry tracing. Without an endpoint it
// hands out a no-op provider, so instrumented code pays next to nothing
// when nobody collects its spans.
package telemetry

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"strings"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
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

// New returns a provider that batches spans to an OTLP collector, or
// Disabled() when no collector is configured. Export is on when
// cfg.Endpoint (--otlp-endpoint) is set, or, as the OpenTelemetry
// specification says, when the environment names a collector
// (OTEL_EXPORTER_OTLP_TRACES_ENDPOINT or OTEL_EXPORTER_OTLP_ENDPOINT);
// OTEL_SDK_DISABLED=true or OTEL_TRACES_EXPORTER=none keep it off. The
// protocol is http/protobuf unless OTEL_EXPORTER_OTLP_TRACES_PROTOCOL or
// OTEL_EXPORTER_OTLP_PROTOCOL says grpc. The exporter reads the other
// OTLP variables (headers, certificates, timeout), the sampler
// OTEL_TRACES_SAMPLER and its argument (default: follow the caller's
// decision, sample new traces), and OTEL_SERVICE_NAME and
// OTEL_RESOURCE_ATTRIBUTES win over cfg.ServiceName.
func New(cfg Config) (*Tracing, error) {
	return newWithEnv(cfg, os.Getenv)
}

func newWithEnv(cfg Config, getenv func(string) string) (*Tracing, error) {
	if strings.EqualFold(getenv("OTEL_SDK_DISABLED"), "true") || getenv("OTEL_TRACES_EXPORTER") == "none" {
		return Disabled(), nil
	}
	envEndpoint := getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") != "" || getenv("OTEL_EXPORTER_OTLP_ENDPOINT") != ""
	if cfg.Endpoint == "" && !envEndpoint {
		return Disabled(), nil
	}
	protocol := getenv("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL")
	if protocol == "" {
		protocol = getenv("OTEL_EXPORTER_OTLP_PROTOCOL")
	}
	exp, err := newExporter(cfg, protocol)
	if err != nil {
		return nil, err
	}
	res, err := newResource(cfg, getenv)
	if err != nil {
		return nil, err
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res))
	return &Tracing{Provider: tp, Propagator: propagation.TraceContext{}, sdk: tp}, nil
}

// newExporter makes the OTLP exporter. Both dial lazily: an unreachable
// collector costs dropped spans, never a failed start. Without
// cfg.Endpoint each reads its endpoint from the environment.
func newExporter(cfg Config, protocol string) (sdktrace.SpanExporter, error) {
	timeout := cfg.ExportTimeout
	if timeout <= 0 {
		timeout = 10 * time.Second
	}
	ctx := context.Background()
	switch protocol {
	case "", "http/protobuf":
		opts := []otlptracehttp.Option{otlptracehttp.WithTimeout(timeout)}
		if cfg.Endpoint != "" {
			target, err := tracesURL(cfg.Endpoint)
			if err != nil {
				return nil, fmt.Errorf("--otlp-endpoint %q: %w", cfg.Endpoint, err)
			}
			opts = append(opts, otlptracehttp.WithEndpointURL(target))
		}
		exp, err := otlptracehttp.New(ctx, opts...)
		if err != nil {
			return nil, fmt.Errorf("OTLP exporter: %w", err)
		}
		return exp, nil
	case "grpc":
		opts := []otlptracegrpc.Option{otlptracegrpc.WithTimeout(timeout)}
		if cfg.Endpoint != "" {
			if err := ValidateEndpoint(cfg.Endpoint); err != nil {
				return nil, fmt.Errorf("--otlp-endpoint %q: %w", cfg.Endpoint, err)
			}
			opts = append(opts, otlptracegrpc.WithEndpointURL(cfg.Endpoint))
		}
		exp, err := otlptracegrpc.New(ctx, opts...)
		if err != nil {
			return nil, fmt.Errorf("OTLP exporter: %w", err)
		}
		return exp, nil
	}
	return nil, fmt.Errorf("OTEL_EXPORTER_OTLP_PROTOCOL %q: use http/protobuf (the default) or grpc", protocol)
}

// newResource describes the process. resource.Default() reads
// OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES; cfg.ServiceName is only
// the default for a service.name neither sets.
func newResource(cfg Config, getenv func(string) string) (*resource.Resource, error) {
	attrs := []attribute.KeyValue{attribute.String("service.instance.id", cfg.Instance)}
	if getenv("OTEL_SERVICE_NAME") == "" && !strings.Contains(getenv("OTEL_RESOURCE_ATTRIBUTES"), "service.name=") {
		attrs = append(attrs, attribute.String("service.name", cfg.ServiceName))
	}
	// Schemaless, so that no semconv schema URL can clash with
	// resource.Default()'s when the SDK is upgraded; the environment's
	// attributes merged last, so they win.
	res, err := resource.Merge(resource.Default(), resource.NewSchemaless(attrs...))
	if err != nil {
		return nil, fmt.Errorf("trace resource: %w", err)
	}
	return res, nil
}

// Enabled reports whether spans are exported.
func (t *Tracing) Enabled() bool { return t != nil && t.sdk != nil }

// Shutdown flushes the spans still queued and stops the exporter. It is a
// no-op when tracing is off.
func (t *Tracing) Shutdown(ctx context.Context) error {
	if t == nil || t.sdk == nil {
		return nil
	}
	return t.sdk.Shutdown(ctx)
}
