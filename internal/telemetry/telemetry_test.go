package telemetry_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/protobuf/proto"

	"github.com/portcullis-dev/portcullis/internal/telemetry"
)

// collector is a loopback OTLP/HTTP receiver that keeps what it is sent.
type collector struct {
	mu       sync.Mutex
	paths    []string
	spans    []string
	services []string
}

func (c *collector) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	var req coltracepb.ExportTraceServiceRequest
	if err := proto.Unmarshal(body, &req); err != nil || r.Header.Get("Content-Type") != "application/x-protobuf" {
		http.Error(w, "not an OTLP protobuf export", http.StatusBadRequest)
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.paths = append(c.paths, r.URL.Path)
	for _, rs := range req.GetResourceSpans() {
		for _, kv := range rs.GetResource().GetAttributes() {
			if kv.GetKey() == "service.name" {
				c.services = append(c.services, kv.GetValue().GetStringValue())
			}
		}
		for _, ss := range rs.GetScopeSpans() {
			for _, s := range ss.GetSpans() {
				c.spans = append(c.spans, s.GetName())
			}
		}
	}
	w.Header().Set("Content-Type", "application/x-protobuf")
	out, _ := proto.Marshal(&coltracepb.ExportTraceServiceResponse{})
	_, _ = w.Write(out)
}

// Spans reach the collector over OTLP/HTTP, and Shutdown flushes the ones
// still batched.
func TestExportsOverOTLPHTTP(t *testing.T) {
	for _, tc := range []struct{ name, path, wantPath string }{
		{"base URL", "", "/v1/traces"},
		{"explicit path", "/custom/traces", "/custom/traces"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := &collector{}
			srv := httptest.NewServer(c) // 127.0.0.1 only
			defer srv.Close()
			tr, err := telemetry.New(telemetry.Config{Endpoint: srv.URL + tc.path, ServiceName: "portcullis-gateway", Instance: "test-0"})
			if err != nil {
				t.Fatal(err)
			}
			_, span := tr.Provider.Tracer("test").Start(context.Background(), "webhook")
			span.End()
			if err := tr.Shutdown(context.Background()); err != nil {
				t.Fatalf("Shutdown: %v", err)
			}
			c.mu.Lock()
			defer c.mu.Unlock()
			if len(c.spans) != 1 || c.spans[0] != "webhook" {
				t.Fatalf("collector got spans %q", c.spans)
			}
			if c.paths[0] != tc.wantPath {
				t.Errorf("posted to %s, want %s", c.paths[0], tc.wantPath)
			}
			if len(c.services) != 1 || c.services[0] != "portcullis-gateway" {
				t.Errorf("service.name = %q", c.services)
			}
		})
	}
}

func TestDisabledRecordsNothing(t *testing.T) {
	tr, err := telemetry.New(telemetry.Config{})
	if err != nil {
		t.Fatal(err)
	}
	_, span := tr.Provider.Tracer("test").Start(context.Background(), "webhook")
	if span.IsRecording() || span.SpanContext().IsValid() {
		t.Fatal("a span without an endpoint records")
	}
	span.End()
	if err := tr.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
}

func TestValidateEndpoint(t *testing.T) {
	for _, tc := range []struct {
		endpoint string
		ok       bool
	}{
		{"http://otel-collector:4318", true},
		{"https://otel.example.com/v1/traces", true},
		{"otel-collector:4318", false},
		{"grpc://otel-collector:4317", false},
		{"http://", false},
		{"http://bad host", false},
	} {
		if err := telemetry.ValidateEndpoint(tc.endpoint); (err == nil) != tc.ok {
			t.Errorf("ValidateEndpoint(%q) = %v", tc.endpoint, err)
		}
	}
}
