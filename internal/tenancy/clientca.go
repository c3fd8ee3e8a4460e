package tenancy

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// ClientCA is the certificate authority that issues the client certificates
// with which apiservers authenticate. The webhook listener trusts it for
// client certificates (tls.VerifyClientCertIfGiven, since tokens and basic
// auth are valid too); Authenticate then looks the certificate up by its
// fingerprint, which is also how a certificate is revoked.
type ClientCA struct {
	cert    *x509.Certificate
	certPEM []byte
	key     crypto.Signer
	pool    *x509.CertPool
}

// LoadClientCA reads a CA certificate and its private key (PEM files, as
// given by --client-ca-cert and --client-ca-key).
func LoadClientCA(certFile, keyFile string) (*ClientCA, error) {
	pair, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		return nil, fmt.Errorf("load client CA: %w", err)
	}
	signer, ok := pair.PrivateKey.(crypto.Signer)
	if !ok {
		return nil, errors.New("load client CA: the key cannot sign")
	}
	cert, err := x509.ParseCertificate(pair.Certificate[0])
	if err != nil {
		return nil, fmt.Errorf("load client CA: %w", err)
	}
	if !cert.IsCA || cert.KeyUsage&x509.KeyUsageCertSign == 0 {
		return nil, fmt.Errorf("load client CA: %s is not a CA certificate (basicConstraints CA and keyUsage certSign are required)", certFile)
	}
	return newClientCA(cert, signer), nil
}

// Client CA file names inside the state directory (--dev).
const (
	ClientCACertFile = "client-ca.crt"
	ClientCAKeyFile  = "client-ca.key"
)

// LoadOrCreateClientCA loads dir/client-ca.crt and dir/client-ca.key, or
// generates them when neither exists. It is for --dev: production passes
// --client-ca-cert and --client-ca-key to LoadClientCA.
func LoadOrCreateClientCA(dir string) (*ClientCA, error) {
	certFile := filepath.Join(dir, ClientCACertFile)
	keyFile := filepath.Join(dir, ClientCAKeyFile)
	_, errCert := os.Stat(certFile)
	_, errKey := os.Stat(keyFile)
	if errCert == nil || errKey == nil {
		return LoadClientCA(certFile, keyFile)
	}
	ca, err := NewClientCA("portcullis dev client CA", 10*365*24*time.Hour)
	if err != nil {
		return nil, err
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(ca.key)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}), 0o600); err != nil {
		return nil, err
	}
	if err := os.WriteFile(certFile, ca.certPEM, 0o644); err != nil {
		return nil, err
	}
	return ca, nil
}

// NewClientCA generates a self-signed ECDSA P-256 CA in memory.
func NewClientCA(commonName string, validity time.Duration) (*ClientCA, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	now := time.Now()
	// No SerialNumber: CreateCertificate draws a random one, as RFC 5280
	// 4.1.2.2 wants (positive, at most 20 octets), when the template has none.
	tmpl := &x509.Certificate{
		Subject:               pkix.Name{CommonName: commonName, Organization: []string{"portcullis"}},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(validity),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
		MaxPathLenZero:        true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		return nil, err
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	return newClientCA(cert, key), nil
}

func newClientCA(cert *x509.Certificate, key crypto.Signer) *ClientCA {
	pool := x509.NewCertPool()
	pool.AddCert(cert)
	return &ClientCA{
		cert:    cert,
		certPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: cert.Raw}),
		key:     key,
		pool:    pool,
	}
}

// Pool returns a pool holding the CA, for tls.Config.ClientCAs.
func (ca *ClientCA) Pool() *x509.CertPool { return ca.pool }

// CertPEM returns the CA certificate.
func (ca *ClientCA) CertPEM() []byte { return ca.certPEM }

// Certificate returns the parsed CA certificate.
func (ca *ClientCA) Certificate() *x509.Certificate { return ca.cert }

// ConfigureTLS makes cfg ask for a client certificate and verify one, if
// given, against the CA. Tokens and basic auth stay valid, so a client
// without a certificate is let through to Authenticate.
func (ca *ClientCA) ConfigureTLS(cfg *tls.Config) {
	cfg.ClientAuth = tls.VerifyClientCertIfGiven
	cfg.ClientCAs = ca.pool
}

// issue signs pub into a client certificate naming the tenant and cluster:
// CN is the cluster, O the tenant. The subject of a CSR is ignored; only its
// key is used.
func (ca *ClientCA) issue(pub crypto.PublicKey, tenant, cluster string, notAfter time.Time) (*x509.Certificate, error) {
	if err := checkPublicKey(pub); err != nil {
		return nil, err
	}
	now := time.Now()
	if notAfter.After(ca.cert.NotAfter) {
		notAfter = ca.cert.NotAfter
	}
	// No SerialNumber: CreateCertificate draws a random one (see NewClientCA).
	tmpl := &x509.Certificate{
		Subject: pkix.Name{
			CommonName:         cluster,
			Organization:       []string{tenant},
			OrganizationalUnit: []string{"portcullis cluster"},
		},
		NotBefore:             now.Add(-5 * time.Minute), // clock skew
		NotAfter:              notAfter,
		KeyUsage:              x509.KeyUsageDigitalSignature,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
		BasicConstraintsValid: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, pub, ca.key)
	if err != nil {
		return nil, fmt.Errorf("sign client certificate: %w", err)
	}
	return x509.ParseCertificate(der)
}

func checkPublicKey(pub crypto.PublicKey) error {
	switch k := pub.(type) {
	case *ecdsa.PublicKey:
		switch k.Curve {
		case elliptic.P256(), elliptic.P384(), elliptic.P521():
			return nil
		}
		return invalid(nil, "the CSR's ECDSA curve is not supported (use P-256, P-384 or P-521)")
	case *rsa.PublicKey:
		if k.N.BitLen() < 2048 {
			return invalid(nil, "the CSR's RSA key is shorter than 2048 bits")
		}
		return nil
	case ed25519.PublicKey:
		return nil
	}
	return invalid(nil, "the CSR's key type is not supported (use ECDSA, RSA or Ed25519)")
}

// parseCSR decodes a PEM CSR and checks its signature.
// CheckCSR reports, as a fault.Invalid error, what SignCSR would refuse in a
// CSR, so that a caller can check a request before doing anything.
func CheckCSR(csrPEM []byte) error {
	csr, err := parseCSR(csrPEM)
	if err != nil {
		return err
	}
	return checkPublicKey(csr.PublicKey)
}

func parseCSR(csrPEM []byte) (*x509.CertificateRequest, error) {
	block, _ := pem.Decode(csrPEM)
	if block == nil || (block.Type != "CERTIFICATE REQUEST" && block.Type != "NEW CERTIFICATE REQUEST") {
		return nil, invalid(nil, "the CSR is not a PEM \"CERTIFICATE REQUEST\" block")
	}
	csr, err := x509.ParseCertificateRequest(block.Bytes)
	if err != nil {
		return nil, invalid(err, "the CSR cannot be parsed")
	}
	if err := csr.CheckSignature(); err != nil {
		return nil, invalid(err, "the CSR's signature is invalid")
	}
	return csr, nil
}

func newClientKey() (*ecdsa.PrivateKey, []byte, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, nil, err
	}
	return key, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), nil
}

// Fingerprint is the SHA-256 of a certificate's DER, the key under which
// certificates are stored and revoked.
func Fingerprint(der []byte) [32]byte { return sha256.Sum256(der) }
