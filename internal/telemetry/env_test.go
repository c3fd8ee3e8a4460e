package telemetry_test

import (
	"context"
	"net"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/grpc"

	"github.com/portcullis-dev/portcullis/internal/telemetry"
)

// clearOTelEnv leaves the standard variables empty, so that a machine's
// own settings cannot change a test.
func clearOTelEnv(t *testing.T) {
	for _, k := range []string{"OTEL_SDK_DISABLED", "OTEL_TRACES_EXPORTER", "OTEL_EXPORTER_OTLP_ENDPOINT",
		"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_PROTOCOL", "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL",
		"OTEL_SERVICE_NAME", "OTEL_RESOURCE_ATTRIBUTES"} {
		t.Setenv(k, "")
	}
}

func exportOne(t *testing.T, cfg telemetry.Config) {
	t.Helper()
	tr, err := telemetry.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	_, span := tr.Provider.Tracer("test").Start(context.Background(), "webhook")
	if !span.IsRecording() {
		t.Fatal("the span does not record: export is off")
	}
	span.End()
	if err := tr.Shutdown(context.Background()); err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
}

// OTEL_EXPORTER_OTLP_ENDPOINT alone switches export on, with the default
// protocol http/protobuf, and OTEL_SERVICE_NAME wins over the gateway's
// default name.
func TestStandardEnvironment(t *testing.T) {
	clearOTelEnv(t)
	c := &collector{}
	srv := httptest.NewServer(c)
	defer srv.Close()
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", srv.URL)
	t.Setenv("OTEL_SERVICE_NAME", "gateway-eu")
	exportOne(t, telemetry.Config{ServiceName: "portcullis-gateway", Instance: "x"})
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.spans) != 1 || c.paths[0] != "/v1/traces" {
		t.Fatalf("collector got spans %q at %q", c.spans, c.paths)
	}
	if len(c.services) != 1 || c.services[0] != "gateway-eu" {
		t.Fatalf("service.name = %q, want OTEL_SERVICE_NAME's", c.services)
	}
}

func TestStandardEnvironmentSwitchesOff(t *testing.T) {
	for _, kv := range [][2]string{{"OTEL_SDK_DISABLED", "true"}, {"OTEL_TRACES_EXPORTER", "none"}} {
		clearOTelEnv(t)
		t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:1")
		t.Setenv(kv[0], kv[1])
		tr, err := telemetry.New(telemetry.Config{Endpoint: "http://127.0.0.1:1"})
		if err != nil {
			t.Fatal(err)
		}
		if _, span := tr.Provider.Tracer("t").Start(context.Background(), "x"); span.IsRecording() {
			t.Errorf("%s=%s: tracing is on", kv[0], kv[1])
		}
	}
	clearOTelEnv(t)
	t.Setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "http/json")
	if _, err := telemetry.New(telemetry.Config{Endpoint: "http://127.0.0.1:1"}); err == nil || !strings.Contains(err.Error(), "http/protobuf") {
		t.Errorf("an unsupported protocol: %v", err)
	}
}

// grpcCollector is a loopback OTLP/gRPC receiver.
type grpcCollector struct {
	coltracepb.UnimplementedTraceServiceServer
	mu    sync.Mutex
	spans []string
}

func (g *grpcCollector) Export(_ context.Context, req *coltracepb.ExportTraceServiceRequest) (*coltracepb.ExportTraceServiceResponse, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, rs := range req.GetResourceSpans() {
		for _, ss := range rs.GetScopeSpans() {
			for _, s := range ss.GetSpans() {
				g.spans = append(g.spans, s.GetName())
			}
		}
	}
	return &coltracepb.ExportTraceServiceResponse{}, nil
}

// OTEL_EXPORTER_OTLP_PROTOCOL=grpc exports over gRPC, to --otlp-endpoint
// or to the environment's endpoint.
func TestGRPCProtocol(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	g := &grpcCollector{}
	srv := grpc.NewServer()
	coltracepb.RegisterTraceServiceServer(srv, g)
	go func() { _ = srv.Serve(ln) }()
	defer srv.Stop()
	url := "http://" + ln.Addr().String()

	clearOTelEnv(t)
	t.Setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc")
	exportOne(t, telemetry.Config{Endpoint: url, ServiceName: "s"})
	t.Setenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", url)
	exportOne(t, telemetry.Config{ServiceName: "s"})
	g.mu.Lock()
	defer g.mu.Unlock()
	if len(g.spans) != 2 {
		t.Fatalf("the gRPC collector got %q, want two spans", g.spans)
	}
}
