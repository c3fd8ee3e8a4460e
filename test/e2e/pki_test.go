package e2e

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// pki is what a kube-apiserver needs of its own, apart from the gateway's
// artifacts: a serving certificate, a CA for its clients and the
// service-account signing key. All files live in dir.
type pki struct {
	dir                     string
	caFile                  string
	servingCert, servingKey string
	saKey                   string
	// adminCert and adminKey authenticate the test as a member of
	// system:masters.
	adminCert, adminKey []byte
	caPEM               []byte
}

func newPKI(t *testing.T, dir string) *pki {
	t.Helper()
	p := &pki{dir: dir, caFile: filepath.Join(dir, "ca.crt"),
		servingCert: filepath.Join(dir, "serving.crt"), servingKey: filepath.Join(dir, "serving.key"),
		saKey: filepath.Join(dir, "sa.key")}
	caKey := newKey(t)
	caTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "e2e-apiserver-ca"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature, IsCA: true, BasicConstraintsValid: true,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	ca, err := x509.ParseCertificate(caDER)
	if err != nil {
		t.Fatal(err)
	}
	p.caPEM = pemBlock("CERTIFICATE", caDER)
	writeFile(t, p.caFile, p.caPEM)

	servingDER, servingKey := issue(t, ca, caKey, &x509.Certificate{
		SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "kube-apiserver"},
		DNSNames: []string{"localhost"}, IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	})
	writeFile(t, p.servingCert, pemBlock("CERTIFICATE", servingDER))
	writeFile(t, p.servingKey, servingKey)

	adminDER, adminKey := issue(t, ca, caKey, &x509.Certificate{
		SerialNumber: big.NewInt(3), Subject: pkix.Name{CommonName: "e2e-admin", Organization: []string{"system:masters"}},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	})
	p.adminCert, p.adminKey = pemBlock("CERTIFICATE", adminDER), adminKey

	saDER, err := x509.MarshalECPrivateKey(newKey(t))
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, p.saKey, pemBlock("EC PRIVATE KEY", saDER))
	return p
}

func newKey(t *testing.T) *ecdsa.PrivateKey {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// issue signs tmpl with the CA and returns the certificate's DER and its
// key's PEM.
func issue(t *testing.T, ca *x509.Certificate, caKey *ecdsa.PrivateKey, tmpl *x509.Certificate) ([]byte, []byte) {
	t.Helper()
	key := newKey(t)
	tmpl.NotBefore, tmpl.NotAfter = time.Now().Add(-time.Hour), time.Now().Add(24*time.Hour)
	tmpl.KeyUsage = x509.KeyUsageDigitalSignature
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return der, pemBlock("EC PRIVATE KEY", keyDER)
}

func pemBlock(typ string, der []byte) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der})
}

func writeFile(t *testing.T, path string, b []byte) {
	t.Helper()
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
}
