package cli

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/portcullis-dev/portcullis/internal/apiv1"
)

// client calls the admin API.
type client struct {
	base  *url.URL
	token string
	http  *http.Client
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
	return &client{base: u, token: cfg.Token, http: &http.Client{Transport: tr, Timeout: 2 * time.Minute}}, nil
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
func apiPath(segments ...string) string {
	var b strings.Builder
	b.WriteString("/api/v1")
	for _, s := range segments {
		b.WriteByte('/')
		b.WriteString(url.PathEscape(s))
	}
	return b.String()
}

// request is one API call.
type request struct {
	method, path string
	query        url.Values
	body         []byte
	contentType  string
}

// do sends r and returns the answer's body; an error answer becomes a
// *statusError.
func (c *client) do(e *env, r request) ([]byte, error) {
	// r.path is escaped already (apiPath).
	target := strings.TrimRight(c.base.String(), "/") + r.path
	if len(r.query) > 0 {
		target += "?" + r.query.Encode()
	}
	var body io.Reader
	if r.body != nil {
		body = bytes.NewReader(r.body)
	}
	req, err := http.NewRequestWithContext(e.ctx, r.method, target, body)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer "+c.token)
	req.Header.Set("Accept", "application/json")
	if r.body != nil {
		ct := r.contentType
		if ct == "" {
			ct = "application/json"
		}
		req.Header.Set("Content-Type", ct)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		var unknownCA x509.UnknownAuthorityError
		if errors.As(err, &unknownCA) {
			return nil, fmt.Errorf("%s %s: %w (pass the CA that signed it with --ca-file, PORTCULLIS_CA_FILE or admin login)", r.method, c.base.Host, err)
		}
		return nil, fmt.Errorf("%s %s: %w", r.method, c.base.Host, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("reading the answer: %w", err)
	}
	if resp.StatusCode >= 200 && resp.StatusCode < 300 {
		return b, nil
	}
	se := &statusError{Code: resp.StatusCode}
	if json.Unmarshal(b, &se.Status) != nil || se.Status.Message == "" {
		se.Status.Message = strings.TrimSpace(string(b))
		if se.Status.Message == "" {
			se.Status.Message = http.StatusText(resp.StatusCode)
		}
	}
	return nil, se
}

// getJSON GETs path and decodes the answer into v; it returns the raw
// answer too, for -o json.
func (c *client) getJSON(e *env, path string, q url.Values, v any) ([]byte, error) {
	b, err := c.do(e, request{method: http.MethodGet, path: path, query: q})
	if err != nil {
		return nil, err
	}
	if v != nil {
		if err := json.Unmarshal(b, v); err != nil {
			return nil, fmt.Errorf("the server's answer to GET %s: %w", path, err)
		}
	}
	return b, nil
}

// sendJSON sends body as JSON and decodes the answer into v.
func (c *client) sendJSON(e *env, method, path string, q url.Values, body, v any) ([]byte, error) {
	var raw []byte
	if body != nil {
		var err error
		if raw, err = json.Marshal(body); err != nil {
			return nil, err
		}
	}
	b, err := c.do(e, request{method: method, path: path, query: q, body: raw})
	if err != nil {
		return nil, err
	}
	if v != nil && len(b) > 0 {
		if err := json.Unmarshal(b, v); err != nil {
			return nil, fmt.Errorf("the server's answer to %s %s: %w", method, path, err)
		}
	}
	return b, nil
}

// listAll follows the continue cursor of a list endpoint and decodes the
// items. It also returns the answer to print for -o json: the server's own
// when there was one page, else one List of every item.
func listAll[T any](e *env, c *client, path string, q url.Values) ([]T, []byte, error) {
	if q == nil {
		q = url.Values{}
	}
	q.Set(apiv1.QueryLimit, fmt.Sprint(apiv1.MaxLimit))
	var items []json.RawMessage
	var raw []byte
	for pages := 0; ; pages++ {
		var page apiv1.List[json.RawMessage]
		b, err := c.getJSON(e, path, q, &page)
		if err != nil {
			return nil, nil, err
		}
		if pages == 0 {
			raw = b
		}
		items = append(items, page.Items...)
		if page.Continue == "" {
			break
		}
		q.Set(apiv1.QueryContinue, page.Continue)
		raw = nil
	}
	if items == nil {
		items = []json.RawMessage{}
	}
	if raw == nil {
		var err error
		if raw, err = json.MarshalIndent(apiv1.List[json.RawMessage]{Items: items}, "", "  "); err != nil {
			return nil, nil, err
		}
	}
	out, err := decodeItems[T](items)
	return out, raw, err
}

// decodeItems decodes raw list items into typed values.
func decodeItems[T any](items []json.RawMessage) ([]T, error) {
	out := make([]T, 0, len(items))
	for _, it := range items {
		var v T
		if err := json.Unmarshal(it, &v); err != nil {
			return nil, fmt.Errorf("the server's answer: %w", err)
		}
		out = append(out, v)
	}
	return out, nil
}
