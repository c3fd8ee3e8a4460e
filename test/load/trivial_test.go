package load

import (
	"crypto/subtle"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Environment of the trivial webhook, which runs as this test binary
// re-executed (see TestMain) on its own pinned core.
const (
	envTrivialAddr  = "PORTCULLIS_LOAD_TRIVIAL_ADDR"
	envTrivialCert  = "PORTCULLIS_LOAD_TRIVIAL_CERT"
	envTrivialKey   = "PORTCULLIS_LOAD_TRIVIAL_KEY"
	envTrivialToken = "PORTCULLIS_LOAD_TRIVIAL_TOKEN"
)

// trivialHandler is the reference: it checks the bearer token, decodes the
// AdmissionReview with the k8s.io/api types (encoding/json, as a typical Go
// webhook does) and answers allowed, echoing the uid.
func trivialHandler(token string) http.Handler {
	want := []byte("Bearer " + token)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			http.Error(w, "POST only", http.StatusMethodNotAllowed)
			return
		}
		if subtle.ConstantTimeCompare([]byte(r.Header.Get("Authorization")), want) != 1 {
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, 8<<20))
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		var rev admissionv1.AdmissionReview
		if err := json.Unmarshal(body, &rev); err != nil || rev.Request == nil {
			http.Error(w, "bad AdmissionReview", http.StatusBadRequest)
			return
		}
		out, err := json.Marshal(&admissionv1.AdmissionReview{
			TypeMeta: metav1.TypeMeta{APIVersion: "admission.k8s.io/v1", Kind: "AdmissionReview"},
			Response: &admissionv1.AdmissionResponse{UID: rev.Request.UID, Allowed: true},
		})
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(out)
	})
}

// runTrivial serves the trivial webhook with the gateway's HTTPS set-up
// (TLS 1.2+, HTTP/1.1 and HTTP/2 with 1000 streams, the same timeouts) until
// killed.
func runTrivial() {
	cert, err := tls.LoadX509KeyPair(os.Getenv(envTrivialCert), os.Getenv(envTrivialKey))
	if err != nil {
		log.Fatalf("trivial webhook: %v", err)
	}
	ln, err := net.Listen("tcp", os.Getenv(envTrivialAddr))
	if err != nil {
		log.Fatalf("trivial webhook: %v", err)
	}
	srv := &http.Server{
		Handler:           trivialHandler(os.Getenv(envTrivialToken)),
		TLSConfig:         &tls.Config{MinVersion: tls.VersionTLS12, Certificates: []tls.Certificate{cert}},
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       60 * time.Second,
		WriteTimeout:      60 * time.Second,
		IdleTimeout:       120 * time.Second,
		MaxHeaderBytes:    64 << 10,
		HTTP2:             &http.HTTP2Config{MaxConcurrentStreams: 1000},
		Protocols:         new(http.Protocols),
	}
	srv.Protocols.SetHTTP1(true)
	srv.Protocols.SetHTTP2(true)
	fmt.Fprintln(os.Stderr, "trivial webhook serving on", ln.Addr())
	if err := srv.ServeTLS(ln, "", ""); err != nil && !errors.Is(err, http.ErrServerClosed) {
		log.Fatalf("trivial webhook: %v", err)
	}
}
