package deadline

import (
	"bytes"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// serve runs h behind a server whose WriteTimeout is writeTimeout, as the
// gateway's listeners are.
func serve(t *testing.T, h http.Handler, writeTimeout time.Duration) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: h, WriteTimeout: writeTimeout}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	return "http://" + ln.Addr().String()
}

// A handler that outlives the server's WriteTimeout: the client used to get
// a broken connection and the log nothing; now it gets a 504 Status before
// the WriteTimeout, and the log a line.
func TestCutOffRequestIsAnsweredAndLogged(t *testing.T) {
	release := make(chan struct{})
	defer close(release)
	slow := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		<-release // ignores its context, as CPU-bound work does
		w.WriteHeader(http.StatusOK)
	})
	var logs bytes.Buffer
	logger := slog.New(slog.NewTextHandler(&logs, nil))
	cases := []struct {
		name    string
		handler http.Handler
		want    int // 0: no answer
	}{
		{"bare handler", slow, 0},
		{"deadline handler", &Handler{Next: slow, Timeout: 150 * time.Millisecond, Logger: logger}, http.StatusGatewayTimeout},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			url := serve(t, tc.handler, 400*time.Millisecond)
			client := &http.Client{Timeout: 2 * time.Second}
			resp, err := client.Post(url+"/api/v1/tenants/a/apply", "application/yaml", strings.NewReader("kind: x"))
			if tc.want == 0 {
				if err == nil {
					_, err = io.ReadAll(resp.Body)
					resp.Body.Close()
				}
				if err == nil {
					t.Fatalf("a bare handler past WriteTimeout was answered %d", resp.StatusCode)
				}
				return
			}
			if err != nil {
				t.Fatalf("no answer: %v", err)
			}
			defer resp.Body.Close()
			var st metav1.Status
			if err := json.NewDecoder(resp.Body).Decode(&st); err != nil {
				t.Fatal(err)
			}
			if resp.StatusCode != tc.want || st.Code != int32(tc.want) || st.Reason != metav1.StatusReasonTimeout ||
				!strings.Contains(st.Message, "did not complete within 150ms") {
				t.Fatalf("answer %d %+v", resp.StatusCode, st)
			}
			if l := logs.String(); !strings.Contains(l, "request cut off at its deadline") || !strings.Contains(l, "/api/v1/tenants/a/apply") {
				t.Fatalf("log = %q", l)
			}
		})
	}
}

// A handler that finishes in time is answered as it wrote, headers and all.
func TestHandlerInTimeIsPassedThrough(t *testing.T) {
	h := &Handler{Timeout: time.Second, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		Next: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if _, ok := r.Context().Deadline(); !ok {
				t.Error("the handler's context has no deadline")
			}
			w.Header().Set("X-Test", "1")
			w.WriteHeader(http.StatusCreated)
			_, _ = io.WriteString(w, "made")
		})}
	resp, err := http.Get(serve(t, h, 5*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusCreated || resp.Header.Get("X-Test") != "1" || string(body) != "made" {
		t.Fatalf("answer %d %v %q", resp.StatusCode, resp.Header, body)
	}
}

// A panic of the handler reaches net/http, which logs it and closes the
// connection: the handlers recover their own, so this is a bug or
// http.ErrAbortHandler.
func TestPanicPropagates(t *testing.T) {
	h := &Handler{Timeout: time.Second, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		Next: http.HandlerFunc(func(http.ResponseWriter, *http.Request) { panic(http.ErrAbortHandler) })}
	defer func() {
		if p := recover(); p != http.ErrAbortHandler {
			t.Fatalf("recovered %v", p)
		}
	}()
	h.ServeHTTP(nopWriter{}, httptest.NewRequest("GET", "/", nil))
	t.Fatal("no panic")
}

type nopWriter struct{}

func (nopWriter) Header() http.Header         { return http.Header{} }
func (nopWriter) Write(b []byte) (int, error) { return len(b), nil }
func (nopWriter) WriteHeader(int)             {}
