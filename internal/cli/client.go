package cli

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/portcullis-dev/portcullis/internal/apiclient"
)

// client calls the admin API through apiclient, in the context of the
// command, and says its errors the CLI's way (explain).
type client struct {
	api *apiclient.Client
}

func newClient(cfg Config) (*client, error) {
	u, err := url.Parse(strings.TrimRight(cfg.Server, "/"))
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return nil, usageErr("server %q: want a URL such as https://localhost:9443", cfg.Server)
	}
	tlsCfg := &tls.Config{MinVersion: tls.VersionTLS12}
	if cfg.CAFile != "" {
		pem, err := os.ReadFile(cfg.CAFile)
		if err != nil {
			return nil, exitError{exitUsage, fmt.Errorf("CA file: %w", err)}
		}
		roots := x509.NewCertPool()
		if !roots.AppendCertsFromPEM(pem) {
			return nil, usageErr("CA file %s holds no PEM certificate", cfg.CAFile)
		}
		tlsCfg.RootCAs = roots
	}
	tr := &http.Transport{TLSClientConfig: tlsCfg, ForceAttemptHTTP2: true, Proxy: http.ProxyFromEnvironment}
	return &client{api: &apiclient.Client{Base: u.String(), Token: cfg.Token,
		HTTP: &http.Client{Transport: tr, Timeout: 2 * time.Minute}}}, nil
}

// connect resolves the connection settings and returns a client.
func (e *env) connect(c *connFlags) (*client, error) {
	if err := c.checkOutput(); err != nil {
		return nil, err
	}
	cfg, err := e.resolve(c)
	if err != nil {
		return nil, err
	}
	return newClient(cfg)
}

// apiPath joins escaped path segments under /api/v1.
func apiPath(segments ...string) string { return apiclient.Path(segments...) }

// do sends r and returns the answer's body. An error answer becomes a
// *statusError, which says it the CLI's way.
func (c *client) do(e *env, r apiclient.Request) ([]byte, error) {
	b, err := c.api.Do(e.ctx, r)
	return b, c.explain(err)
}

// getJSON GETs path and decodes the answer into v; it returns the raw
// answer too, for -o json.
func (c *client) getJSON(e *env, path string, q url.Values, v any) ([]byte, error) {
	b, err := c.api.Get(e.ctx, path, q, v)
	return b, c.explain(err)
}

// sendJSON sends body as JSON and decodes the answer into v.
func (c *client) sendJSON(e *env, method, path string, q url.Values, body, v any) ([]byte, error) {
	b, err := c.api.Send(e.ctx, method, path, q, body, v)
	return b, c.explain(err)
}

// listAll follows the continue cursor of a list endpoint and decodes the
// items. It also returns the answer to print for -o json: the server's own
// when there was one page, else one List of every item.
func listAll[T any](e *env, c *client, path string, q url.Values) ([]T, []byte, error) {
	items, raw, err := apiclient.ListAll[T](e.ctx, c.api, path, q)
	return items, raw, c.explain(err)
}

// decodeItems decodes raw list items into typed values.
func decodeItems[T any](items []json.RawMessage) ([]T, error) {
	return apiclient.DecodeItems[T](items)
}

// explain turns an error of the API client into what the CLI prints: an
// error answer as a *statusError, and a server certificate signed by an
// unknown CA with the ways to pass that CA.
func (c *client) explain(err error) error {
	var ae *apiclient.Error
	if errors.As(err, &ae) {
		return &statusError{api: ae}
	}
	var unknownCA x509.UnknownAuthorityError
	if errors.As(err, &unknownCA) {
		return fmt.Errorf("%w (pass the CA that signed it with --ca-file, PORTCULLIS_CA_FILE or admin login)", err)
	}
	return err
}
