// Package tlsutil serves TLS certificates from files that may change on
// disk, and creates the development CA and serving certificate.
package tlsutil

import (
	"bytes"
	"context"
	"crypto/tls"
	"fmt"
	"log/slog"
	"os"
	"sync/atomic"
	"time"
)

// FileSource holds a key pair loaded from two PEM files and reloads it when
// either file's content changes. A half-written or mismatched pair is
// ignored (the previous pair keeps serving) until both files agree again.
type FileSource struct {
	CertFile, KeyFile string
	// Interval between checks of the files; one second when zero.
	Interval time.Duration
	Logger   *slog.Logger

	cur               atomic.Pointer[tls.Certificate]
	lastCert, lastKey []byte
}

// Load reads the pair once; call it before serving.
func (s *FileSource) Load() error {
	certPEM, err := os.ReadFile(s.CertFile)
	if err != nil {
		return fmt.Errorf("read TLS certificate: %w", err)
	}
	keyPEM, err := os.ReadFile(s.KeyFile)
	if err != nil {
		return fmt.Errorf("read TLS key: %w", err)
	}
	return s.use(certPEM, keyPEM)
}

func (s *FileSource) use(certPEM, keyPEM []byte) error {
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return fmt.Errorf("TLS key pair %s, %s: %w", s.CertFile, s.KeyFile, err)
	}
	s.cur.Store(&pair)
	s.lastCert, s.lastKey = certPEM, keyPEM
	return nil
}

// Watch reloads the pair whenever the files change, until ctx ends.
func (s *FileSource) Watch(ctx context.Context) {
	interval := s.Interval
	if interval <= 0 {
		interval = time.Second
	}
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		certPEM, err1 := os.ReadFile(s.CertFile)
		keyPEM, err2 := os.ReadFile(s.KeyFile)
		if err1 != nil || err2 != nil {
			continue // mid-rotation; keep serving the old pair
		}
		if bytes.Equal(certPEM, s.lastCert) && bytes.Equal(keyPEM, s.lastKey) {
			continue
		}
		if err := s.use(certPEM, keyPEM); err != nil {
			if s.Logger != nil {
				s.Logger.Warn("TLS files changed but do not form a valid pair yet; still serving the previous certificate", "error", err)
			}
			continue
		}
		if s.Logger != nil {
			s.Logger.Info("reloaded TLS certificate", "cert", s.CertFile)
		}
	}
}

// GetCertificate is for tls.Config.GetCertificate.
func (s *FileSource) GetCertificate(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	return s.cur.Load(), nil
}
