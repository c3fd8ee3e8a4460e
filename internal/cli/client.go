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
	"path/filepath"
	"strings"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/portcullis-dev/portcullis/internal/apiv1"
)

// Config is the file `admin login` writes.
type Config struct {
	Server string `json:"server"`
	Token  string `json:"token"`
	CAFile string `json:"caFile,omitempty"`
}

// configPath is where `admin login` keeps the connection:
// PORTCULLIS_CONFIG, else $XDG_CONFIG_HOME/portcullis/config.yaml, else
// ~/.config/portcullis/config.yaml.
func (e *env) configPath(flagValue string) (string, error) {
	if flagValue != "" {
		return flagValue, nil
	}
	if p := e.getenv("PORTCULLIS_CONFIG"); p != "" {
		return p, nil
	}
	if d := e.getenv("XDG_CONFIG_HOME"); d != "" {
		return filepath.Join(d, "portcullis", "config.yaml"), nil
	}
	home := e.getenv("HOME")
	if home == "" {
		return "", errors.New("cannot place the config file: neither XDG_CONFIG_HOME nor HOME is set (or set PORTCULLIS_CONFIG)")
	}
	return filepath.Join(home, ".config", "portcullis", "config.yaml"), nil
}

func readConfig(path string) (Config, bool, error) {
	var cfg Config
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return cfg, false, nil
	}
	if err != nil {
		return cfg, false, err
	}
	if err := yaml.UnmarshalStrict(b, &cfg); err != nil {
		return cfg, false, fmt.Errorf("config file %s: %w", path, err)
	}
	return cfg, true, nil
}

func writeConfig(path string, cfg Config) error {
	b, err := yaml.Marshal(cfg)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	// The file holds a token: write it private, and fix the mode of a file
	// that was already there.
	if err := os.WriteFile(path, b, 0o600); err != nil {
		return err
	}
	return os.Chmod(path, 0o600)
}

// connFlags are the flags of every command that calls the API.
type connFlags struct {
	server, token, caFile, config string
	output                        string
}

func (f *flags) conn(withOutput bool) *connFlags {
	c := &connFlags{}
	f.StringVar(&c.server, "server", "", "admin API URL, https://host:port (or PORTCULLIS_SERVER, or the config file of admin login)")
	f.StringVar(&c.token, "token", "", "admin API token (or PORTCULLIS_TOKEN, or the config file of admin login)")
	f.StringVar(&c.caFile, "ca-file", "", "CA certificate that signed the server's certificate (or PORTCULLIS_CA_FILE, or the config file of admin login)")
	f.StringVar(&c.config, "config", "", "config file (or PORTCULLIS_CONFIG; default $XDG_CONFIG_HOME/portcullis/config.yaml)")
	if withOutput {
		f.StringVar(&c.output, "o", "", "output format: json or yaml (default: a table)")
	}
	return c
}

func (c *connFlags) checkOutput() error {
	switch c.output {
	case "", "json", "yaml":
		return nil
	}
	return usageErr("-o %q: use json or yaml (or nothing for a table)", c.output)
}

// flagsOrEnv is each setting from its flag, else from the environment.
func (e *env) flagsOrEnv(c *connFlags) Config {
	cfg := Config{Server: c.server, Token: c.token, CAFile: c.caFile}
	if cfg.Server == "" {
		cfg.Server = e.getenv("PORTCULLIS_SERVER")
	}
	if cfg.Token == "" {
		cfg.Token = e.getenv("PORTCULLIS_TOKEN")
	}
	if cfg.CAFile == "" {
		cfg.CAFile = e.getenv("PORTCULLIS_CA_FILE")
	}
	return cfg
}

// resolve picks each setting from the flag, else the environment, else the
// config file. The file's token and CA are used only for the file's
// server, so that a token is never sent to a server it was not saved for.
func (e *env) resolve(c *connFlags) (Config, error) {
	cfg := e.flagsOrEnv(c)
	if cfg.Server == "" || cfg.Token == "" {
		path, err := e.configPath(c.config)
		if err != nil && cfg.Server == "" {
			return cfg, exitError{exitUsage, err}
		}
		if err == nil {
			saved, ok, err := readConfig(path)
			if err != nil {
				return cfg, err
			}
			if ok && (cfg.Server == "" || strings.TrimRight(cfg.Server, "/") == strings.TrimRight(saved.Server, "/")) {
				if cfg.Server == "" {
					cfg.Server = saved.Server
				}
				if cfg.Token == "" {
					cfg.Token = saved.Token
				}
				if cfg.CAFile == "" {
					cfg.CAFile = saved.CAFile
				}
			}
		}
	}
	const how = "run `admin login --server URL --token T [--ca-file F]` once, or pass --server and --token (or set PORTCULLIS_SERVER and PORTCULLIS_TOKEN)"
	switch {
	case cfg.Server == "":
		return cfg, usageErr("no server to talk to: %s", how)
	case cfg.Token == "":
		return cfg, usageErr("no token for %s: %s", cfg.Server, how)
	}
	return cfg, nil
}

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

// Status is the error body of every API error (a Kubernetes Status).
type Status struct {
	Kind    string `json:"kind"`
	Status  string `json:"status"`
	Message string `json:"message"`
	Reason  string `json:"reason"`
	Code    int    `json:"code"`
	Details *struct {
		Name   string  `json:"name,omitempty"`
		Kind   string  `json:"kind,omitempty"`
		Causes []Cause `json:"causes,omitempty"`
	} `json:"details,omitempty"`
}

// Cause is one field error of a Status.
type Cause struct {
	Type    string `json:"reason,omitempty"`
	Message string `json:"message"`
	Field   string `json:"field,omitempty"`
}

// statusError is an error answer of the API.
type statusError struct {
	Code   int
	Status Status
	// where rewrites a cause's field for the reader (apply maps
	// documents[i] back to files); nil keeps it.
	where func(field string) string
}

func (e *statusError) causes() []Cause {
	if e.Status.Details == nil {
		return nil
	}
	return e.Status.Details.Causes
}

func (e *statusError) Error() string {
	where := e.where
	if where == nil {
		where = func(s string) string { return s }
	}
	reason := e.Status.Reason
	if reason == "" {
		reason = http.StatusText(e.Code)
	}
	msg := e.Status.Message
	causes := e.causes()
	// A one-cause Status repeats the cause as its message: say it once.
	if len(causes) == 1 && causes[0].Field != "" && msg == causes[0].Field+": "+causes[0].Message {
		causes = nil
	}
	// A message that goes on to repeat a cause keeps only its summary
	// ("1 of the 2 documents is invalid; nothing was written"); the causes
	// follow, one per line.
	for _, c := range causes {
		at := strings.Index(msg, c.Field)
		if c.Field == "" || at < 0 {
			continue
		}
		if colon := strings.Index(msg, ": "); colon > 0 && colon < at {
			msg = msg[:colon]
		}
		break
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s (%s, HTTP %d)", where(msg), reason, e.Code)
	for _, c := range causes {
		b.WriteString("\n  ")
		if c.Field != "" {
			b.WriteString(where(c.Field) + ": ")
		}
		b.WriteString(where(c.Message))
	}
	return b.String()
}
