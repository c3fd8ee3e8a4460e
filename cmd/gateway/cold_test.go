package main

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/portcullis-dev/portcullis/internal/testutil"
)

// freeAddr returns a loopback address that nothing listens on.
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

// Issue 21 §5: with PostgreSQL unreachable at start, the webhook and admin
// listeners accepted connections and never answered, so every apiserver
// waited its whole webhook timeout. A cold replica answers 503 at once,
// with a Status body and Retry-After.
func TestColdReplicaAnswers503AtOnce(t *testing.T) {
	cfg := testConfig(t, "postgres://postgres@"+freeAddr(t)+"/none?sslmode=disable&connect_timeout=1")
	cfg.WebhookAddr, cfg.AdminAddr = freeAddr(t), freeAddr(t)
	m := NewMain()
	m.Config = cfg
	m.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	ctx, cancel := context.WithCancel(context.Background())
	runErr := make(chan error, 1)
	go func() { runErr <- m.Run(ctx) }()
	defer func() {
		cancel()
		select {
		case <-runErr:
		case <-time.After(10 * time.Second):
			t.Error("Run did not return after its context ended")
		}
		_ = m.Close()
	}()

	// The certificate is not under test here; the answer's speed is.
	c := &http.Client{Timeout: time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, ForceAttemptHTTP2: true}}
	defer c.CloseIdleConnections()
	// Wait for the listener to be bound; from then on every answer must come
	// within the client's one-second timeout.
	testutil.Eventually(t, 10*time.Second, "the webhook listener to be bound", func() bool {
		conn, err := net.Dial("tcp", cfg.WebhookAddr)
		if err == nil {
			conn.Close()
		}
		return err == nil
	})
	for _, tc := range []struct{ name, method, url string }{
		{"webhook validate", http.MethodPost, "https://" + cfg.WebhookAddr + "/t/acme/validate"},
		{"webhook mutate", http.MethodPost, "https://" + cfg.WebhookAddr + "/t/acme/mutate"},
		{"admin API", http.MethodGet, "https://" + cfg.AdminAddr + "/api/v1/whoami"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req, _ := http.NewRequest(tc.method, tc.url, strings.NewReader(`{}`))
			req.Header.Set("Content-Type", "application/json")
			start := time.Now()
			resp, err := c.Do(req)
			if err != nil {
				t.Fatalf("%s %s: %v (a cold replica must answer within 1s)", tc.method, tc.url, err)
			}
			defer resp.Body.Close()
			var st struct {
				Kind, Message string
				Code          int
			}
			if err := json.NewDecoder(resp.Body).Decode(&st); err != nil {
				t.Fatalf("body is not JSON: %v", err)
			}
			if resp.StatusCode != http.StatusServiceUnavailable || st.Kind != "Status" || st.Code != 503 ||
				!strings.Contains(st.Message, "not reached its database") {
				t.Fatalf("answer %d %+v, want a 503 Status", resp.StatusCode, st)
			}
			if resp.Header.Get("Retry-After") == "" {
				t.Fatal("no Retry-After")
			}
			if took := time.Since(start); took > time.Second {
				t.Fatalf("answered after %s", took)
			}
		})
	}
	select {
	case err := <-runErr:
		t.Fatalf("Run returned %v without a database", err)
	default:
	}
}

// /readyz said ready as soon as the database answered, while the webhook
// still answered 503 for as long as loading credentials and warming the
// policy cache took: ready only once the gate is open.
func TestNotReadyUntilServing(t *testing.T) {
	m := NewMain()
	m.webhookGate = &coldGate{}
	m.addReadyChecks()
	m.dbReached.Store(true)
	h := m.Health.Handler(m.Registry)
	ready := func() (int, string) {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/readyz", nil))
		return rec.Code, rec.Body.String()
	}
	if code, body := ready(); code != http.StatusServiceUnavailable || !strings.Contains(body, "not serving yet") {
		t.Fatalf("database reached, gate closed: /readyz %d %q; want 503 saying why", code, body)
	}
	m.webhookGate.open()
	if code, body := ready(); code != http.StatusOK {
		t.Fatalf("gate open: /readyz %d %q; want 200", code, body)
	}
}
