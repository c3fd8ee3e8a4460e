package main

import (
	"fmt"
	"path/filepath"

	"github.com/portcullis-dev/portcullis/internal/tenancy"
	"github.com/portcullis-dev/portcullis/internal/tlsutil"
)

func (m *Main) setupTLS() error {
	cert, key := m.Config.TLSCert, m.Config.TLSKey
	if cert == "" {
		d, err := tlsutil.EnsureDevCerts(filepath.Join(m.Config.StateDir, "tls"))
		if err != nil {
			return fmt.Errorf("create development certificates: %w", err)
		}
		cert, key, m.CAFile = d.CertFile, d.KeyFile, d.CAFile
	}
	m.TLS = &tlsutil.FileSource{CertFile: cert, KeyFile: key, Logger: m.Logger}
	return m.TLS.Load()
}

// setupClientCA loads --client-ca-cert/--client-ca-key, or under --dev
// generates a client CA into the state directory. Without either, client
// certificates are off.
func (m *Main) setupClientCA() error {
	var err error
	switch {
	case m.Config.ClientCACert != "":
		m.ClientCA, err = tenancy.LoadClientCA(m.Config.ClientCACert, m.Config.ClientCAKey)
	case m.Config.Dev:
		m.ClientCA, err = tenancy.LoadOrCreateClientCA(filepath.Join(m.Config.StateDir, "tls"))
	default:
		m.Logger.Warn("no --client-ca-cert: apiservers cannot authenticate with client certificates")
	}
	return err
}
