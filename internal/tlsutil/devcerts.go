package tlsutil

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"io/fs"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
)

// DevCerts are the paths of a development CA and a serving certificate
// signed by it.
type DevCerts struct {
	CAFile, CAKeyFile, CertFile, KeyFile string
}

// EnsureDevCerts creates, once, a CA and a serving certificate for
// localhost, 127.0.0.1, ::1 and extraHosts under dir. Existing files are
// reused, so clients that trust the CA keep trusting it across restarts.
func EnsureDevCerts(dir string, extraHosts ...string) (DevCerts, error) {
	d := DevCerts{
		CAFile:    filepath.Join(dir, "ca.crt"),
		CAKeyFile: filepath.Join(dir, "ca.key"),
		CertFile:  filepath.Join(dir, "serving.crt"),
		KeyFile:   filepath.Join(dir, "serving.key"),
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return d, err
	}
	if exists(d.CAFile) && exists(d.CAKeyFile) && exists(d.CertFile) && exists(d.KeyFile) {
		return d, nil
	}
	ca, caKey, err := EnsureCA(d.CAFile, d.CAKeyFile, "Portcullis development CA")
	if err != nil {
		return d, err
	}
	_, err = IssueServing(ca, caKey, d.CertFile, d.KeyFile, append([]string{"localhost", "127.0.0.1", "::1"}, extraHosts...)...)
	return d, err
}

// IssueServing writes a new serving certificate for hosts (DNS names or IP
// addresses), valid for a year and signed by ca, to certFile and keyFile.
// It returns the certificate's serial number.
func IssueServing(ca *x509.Certificate, caKey *ecdsa.PrivateKey, certFile, keyFile string, hosts ...string) (string, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return "", err
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial(),
		Subject:      pkix.Name{CommonName: "portcullis"},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().AddDate(1, 0, 0),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	for _, h := range hosts {
		if ip := net.ParseIP(h); ip != nil {
			tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
		} else if h != "" {
			tmpl.DNSNames = append(tmpl.DNSNames, h)
		}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		return "", err
	}
	if err := writeKey(keyFile, key); err != nil {
		return "", err
	}
	return tmpl.SerialNumber.String(), writePEM(certFile, "CERTIFICATE", der, 0o644)
}

// EnsureCA loads the CA at certFile/keyFile, creating a self-signed ECDSA
// P-256 CA there first when neither file exists.
func EnsureCA(certFile, keyFile, commonName string) (*x509.Certificate, *ecdsa.PrivateKey, error) {
	if !exists(certFile) && !exists(keyFile) {
		key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			return nil, nil, err
		}
		tmpl := &x509.Certificate{
			SerialNumber:          serial(),
			Subject:               pkix.Name{CommonName: commonName},
			NotBefore:             time.Now().Add(-time.Hour),
			NotAfter:              time.Now().AddDate(10, 0, 0),
			KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign | x509.KeyUsageDigitalSignature,
			BasicConstraintsValid: true,
			IsCA:                  true,
		}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
		if err != nil {
			return nil, nil, err
		}
		if err := writeKey(keyFile, key); err != nil {
			return nil, nil, err
		}
		if err := writePEM(certFile, "CERTIFICATE", der, 0o644); err != nil {
			return nil, nil, err
		}
	}
	return LoadCA(certFile, keyFile)
}

// LoadCA reads a PEM CA certificate and its ECDSA key (SEC 1 or PKCS #8).
func LoadCA(certFile, keyFile string) (*x509.Certificate, *ecdsa.PrivateKey, error) {
	certPEM, err := os.ReadFile(certFile)
	if err != nil {
		return nil, nil, err
	}
	keyPEM, err := os.ReadFile(keyFile)
	if err != nil {
		return nil, nil, err
	}
	cb, _ := pem.Decode(certPEM)
	if cb == nil || cb.Type != "CERTIFICATE" {
		return nil, nil, fmt.Errorf("%s: no PEM certificate", certFile)
	}
	cert, err := x509.ParseCertificate(cb.Bytes)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", certFile, err)
	}
	kb, _ := pem.Decode(keyPEM)
	if kb == nil {
		return nil, nil, fmt.Errorf("%s: no PEM key", keyFile)
	}
	var key any
	switch kb.Type {
	case "EC PRIVATE KEY":
		key, err = x509.ParseECPrivateKey(kb.Bytes)
	default:
		key, err = x509.ParsePKCS8PrivateKey(kb.Bytes)
	}
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", keyFile, err)
	}
	ec, ok := key.(*ecdsa.PrivateKey)
	if !ok {
		return nil, nil, fmt.Errorf("%s: the CA key must be ECDSA", keyFile)
	}
	return cert, ec, nil
}

func writeKey(path string, key *ecdsa.PrivateKey) error {
	der, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return err
	}
	return writePEM(path, "EC PRIVATE KEY", der, 0o600)
}

func writePEM(path, typ string, der []byte, mode os.FileMode) error {
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), mode); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

func exists(p string) bool {
	_, err := os.Stat(p)
	return !errors.Is(err, fs.ErrNotExist)
}

func serial() *big.Int {
	n, _ := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	return n
}
