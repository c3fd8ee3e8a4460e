package main

import (
	"bytes"
	"context"
	"math"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/portcullis-dev/portcullis/internal/pgtest"
	"github.com/portcullis-dev/portcullis/internal/testutil"
)

// During the drain /readyz fails at once while the webhook still answers;
// Close then stops the listeners.
func TestDrainReportsNotReadyAndKeepsServing(t *testing.T) {
	m := startMain(t, testConfig(t, pgtest.URL(t)), func(m *Main) {
		m.WebhookMux.HandleFunc("/ping", func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write([]byte("pong")) })
	})
	c := httpsClient(t, m.CAFile)
	ready := m.MetricsURL() + "/readyz"
	testutil.Eventually(t, 5*time.Second, "the gateway to be ready", func() bool {
		code, _, _ := get(t, http.DefaultClient, ready)
		return code == 200
	})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	drained := make(chan struct{})
	go func() { m.Drain(ctx, time.Minute); close(drained) }()
	testutil.Eventually(t, 2*time.Second, "/readyz to fail once draining", func() bool {
		code, body, _ := get(t, http.DefaultClient, ready)
		return code == http.StatusServiceUnavailable && strings.Contains(body, "shutting down")
	})
	for range 3 {
		if code, body, _ := get(t, c, m.WebhookURL()+"/ping"); code != 200 || body != "pong" {
			t.Fatalf("the webhook stopped answering during the drain: %d %q", code, body)
		}
	}
	select {
	case <-drained:
		t.Fatal("Drain returned before its delay")
	default:
	}
	cancel() // a second signal ends the drain early
	select {
	case <-drained:
	case <-time.After(2 * time.Second):
		t.Fatal("Drain did not end when its context did")
	}
}

func TestPolicyCacheBytesFollowsTheMemoryLimit(t *testing.T) {
	for _, tc := range []struct{ flag, limit, want int64 }{
		{0, math.MaxInt64, 4 << 30},
		{0, 1 << 30, (1 << 30) / 10 * 4},
		{123 << 20, 1 << 30, 123 << 20},
	} {
		if got := policyCacheBytes(tc.flag, tc.limit); got != tc.want {
			t.Errorf("policyCacheBytes(%d, %d) = %d, want %d", tc.flag, tc.limit, got, tc.want)
		}
	}
}

func TestVersionAndBuildInfo(t *testing.T) {
	var b bytes.Buffer
	printVersion(&b)
	if !strings.HasPrefix(b.String(), "portcullis gateway dev (revision ") {
		t.Fatalf("version: %q", b.String())
	}
	m := startMain(t, testConfig(t, pgtest.URL(t)))
	_, body, _ := get(t, http.DefaultClient, m.MetricsURL()+"/metrics")
	if !strings.Contains(body, `portcullis_build_info{goversion="go`) || !strings.Contains(body, `version="dev"} 1`) {
		t.Fatalf("no portcullis_build_info in /metrics")
	}
}
