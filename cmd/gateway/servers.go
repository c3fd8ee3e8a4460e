package main

import (
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/portcullis-dev/portcullis/internal/deadline"
)

// listen binds the three listeners, so that Run fails at once on an address
// in use, before it waits for the database.
func (m *Main) listen() error {
	var err error
	if m.metricsLn, err = net.Listen("tcp", m.Config.MetricsAddr); err != nil {
		return fmt.Errorf("metrics listener: %w", err)
	}
	if m.webhookLn, err = net.Listen("tcp", m.Config.WebhookAddr); err != nil {
		return fmt.Errorf("webhook listener: %w", err)
	}
	if m.adminLn, err = net.Listen("tcp", m.Config.AdminAddr); err != nil {
		return fmt.Errorf("admin listener: %w", err)
	}
	return nil
}

// handlerTimeout bounds every request of the admin listener, below its
// WriteTimeout, so that a request cut off is answered (504) and logged
// rather than reset. The webhook listener is not wrapped: its handler
// answers within the apiserver's ?timeout (at most 30 s) and cancels CEL
// evaluation at that deadline, and the wrapper's goroutine and copy cost
// about 7 µs and 14 allocations a request (BenchmarkOverhead), a few
// percent of the webhook's throughput.
const handlerTimeout = 50 * time.Second

func (m *Main) newServer(h http.Handler, tlsCfg *tls.Config) *http.Server {
	srv := &http.Server{
		Handler:   h,
		TLSConfig: tlsCfg,
		// The apiserver sends its headers at once; a slow sender is not one.
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       60 * time.Second,
		WriteTimeout:      60 * time.Second,
		IdleTimeout:       120 * time.Second,
		MaxHeaderBytes:    m.Config.MaxHeaderBytes,
		ErrorLog:          slog.NewLogLogger(m.Logger.Handler(), slog.LevelWarn),
		HTTP2:             &http.HTTP2Config{MaxConcurrentStreams: 1000},
	}
	if tlsCfg != nil {
		srv.Protocols = new(http.Protocols)
		srv.Protocols.SetHTTP1(true)
		srv.Protocols.SetHTTP2(true)
	}
	return srv
}

func (m *Main) serve(srv *http.Server, ln net.Listener, useTLS bool) {
	m.wg.Add(1)
	go func() {
		defer m.wg.Done()
		var err error
		if useTLS {
			err = srv.ServeTLS(ln, "", "")
		} else {
			err = srv.Serve(ln)
		}
		if err != nil && !errors.Is(err, http.ErrServerClosed) {
			m.Logger.Error("server stopped", "addr", ln.Addr().String(), "error", err)
		}
	}()
}

// serveHTTPS starts the webhook and admin servers, closed by their gates
// until Run opens them. Both take their certificate from m.TLS, so a
// renewed one is served without a restart.
func (m *Main) serveHTTPS() {
	tlsCfg := &tls.Config{MinVersion: tls.VersionTLS12, GetCertificate: m.TLS.GetCertificate}
	webhookTLS := tlsCfg.Clone()
	if m.ClientCA != nil {
		// Ask for a client certificate and verify it if given; tokens and
		// basic auth are valid too, so none is required.
		m.ClientCA.ConfigureTLS(webhookTLS)
	}
	m.webhookGate = &coldGate{next: m.WebhookMux, message: coldWebhookMessage}
	m.adminGate = &coldGate{next: &deadline.Handler{Next: m.AdminMux, Timeout: handlerTimeout, Logger: m.Logger}, message: coldAdminMessage}
	m.webhookSrv = m.newServer(m.webhookGate, webhookTLS)
	m.adminSrv = m.newServer(m.adminGate, tlsCfg.Clone())
	m.serve(m.webhookSrv, m.webhookLn, true)
	m.serve(m.adminSrv, m.adminLn, true)
}

func listenURL(scheme string, ln net.Listener) string {
	if ln == nil {
		return ""
	}
	addr := ln.Addr().(*net.TCPAddr)
	host := "localhost"
	if !addr.IP.IsUnspecified() && !addr.IP.IsLoopback() {
		host = addr.IP.String()
	}
	return fmt.Sprintf("%s://%s", scheme, net.JoinHostPort(host, fmt.Sprint(addr.Port)))
}

// WebhookURL is the base URL of the webhook listener.
func (m *Main) WebhookURL() string { return listenURL("https", m.webhookLn) }

// AdminURL is the base URL of the admin listener.
func (m *Main) AdminURL() string { return listenURL("https", m.adminLn) }

// MetricsURL is the base URL of the operations listener.
func (m *Main) MetricsURL() string {
	if m.Config.MetricsTLS {
		return listenURL("https", m.metricsLn)
	}
	return listenURL("http", m.metricsLn)
}
