// Package apiclient is the one client of the admin API (/api/v1), beside
// its wire types in internal/apiv1. The CLI calls it over HTTPS; the web UI
// calls the API's handler in-process through it (InProcess), so that both
// send the same requests and read every error answer the same way: as an
// *Error that unwraps to the *fault.Error of the Status the API sent.
package apiclient

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	"github.com/portcullis-dev/portcullis/internal/apiv1"
)

// Doer sends one request: an *http.Client for a remote API, InProcess for
// the handler of the same process.
type Doer interface {
	Do(*http.Request) (*http.Response, error)
}

// Client calls the admin API.
type Client struct {
	// Base is the API's origin, such as https://localhost:9443; "" for
	// InProcess, whose requests carry only a path.
	Base string
	// Token is sent as the bearer token; "" sends none (the UI's calls
	// name their token in their context instead).
	Token string
	HTTP  Doer
}

// Path joins escaped path segments under /api/v1.
func Path(segments ...string) string {
	var b strings.Builder
	b.WriteString("/api/v1")
	for _, s := range segments {
		b.WriteByte('/')
		b.WriteString(url.PathEscape(s))
	}
	return b.String()
}

// Request is one API call.
type Request struct {
	Method string
	// Path is escaped already (Path).
	Path  string
	Query url.Values
	Body  []byte
	// ContentType of Body; application/json when empty.
	ContentType string
}

// Do sends r and returns the answer's body. An answer that is not 2xx is
// an *Error; a request that got no answer is an error naming the method
// and the host.
func (c *Client) Do(ctx context.Context, r Request) ([]byte, error) {
	target := strings.TrimRight(c.Base, "/") + r.Path
	if len(r.Query) > 0 {
		target += "?" + r.Query.Encode()
	}
	var body io.Reader
	if r.Body != nil {
		body = bytes.NewReader(r.Body)
	}
	req, err := http.NewRequestWithContext(ctx, r.Method, target, body)
	if err != nil {
		return nil, err
	}
	if c.Token != "" {
		req.Header.Set("Authorization", "Bearer "+c.Token)
	}
	req.Header.Set("Accept", "application/json")
	if r.Body != nil {
		ct := r.ContentType
		if ct == "" {
			ct = "application/json"
		}
		req.Header.Set("Content-Type", ct)
	}
	resp, err := c.HTTP.Do(req)
	if err != nil {
		// url.Error repeats the whole URL, tokens in queries aside; the
		// host says enough.
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return nil, fmt.Errorf("%s %s: %w", r.Method, req.URL.Host, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("reading the answer: %w", err)
	}
	if resp.StatusCode >= 200 && resp.StatusCode < 300 {
		return b, nil
	}
	return nil, decodeError(resp.StatusCode, b)
}

// Get GETs path and decodes the answer into out (unless nil); it returns
// the raw answer too, for a caller that prints it as sent.
func (c *Client) Get(ctx context.Context, path string, q url.Values, out any) ([]byte, error) {
	b, err := c.Do(ctx, Request{Method: http.MethodGet, Path: path, Query: q})
	if err != nil {
		return nil, err
	}
	// A GET always answers a body: an empty one is an error too.
	return b, decode(http.MethodGet, path, b, out, true)
}

// Send sends body (unless nil) as JSON and decodes the answer into out
// (unless nil or the answer is empty).
func (c *Client) Send(ctx context.Context, method, path string, q url.Values, body, out any) ([]byte, error) {
	var raw []byte
	if body != nil {
		var err error
		if raw, err = json.Marshal(body); err != nil {
			return nil, err
		}
	}
	b, err := c.Do(ctx, Request{Method: method, Path: path, Query: q, Body: raw})
	if err != nil {
		return nil, err
	}
	return b, decode(method, path, b, out, false)
}

func decode(method, path string, b []byte, out any, strict bool) error {
	if out == nil || len(b) == 0 && !strict {
		return nil
	}
	if err := json.Unmarshal(b, out); err != nil {
		return fmt.Errorf("the server's answer to %s %s: %w", method, path, err)
	}
	return nil
}

// ListAll follows the continue cursor of a list endpoint and decodes the
// items. It also returns the answer to print as JSON: the server's own
// when there was one page, else one List of every item.
func ListAll[T any](ctx context.Context, c *Client, path string, q url.Values) ([]T, []byte, error) {
	if q == nil {
		q = url.Values{}
	}
	q.Set(apiv1.QueryLimit, fmt.Sprint(apiv1.MaxLimit))
	var items []json.RawMessage
	var raw []byte
	for pages := 0; ; pages++ {
		var page apiv1.List[json.RawMessage]
		b, err := c.Get(ctx, path, q, &page)
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
	out, err := DecodeItems[T](items)
	return out, raw, err
}

// DecodeItems decodes raw list items into typed values.
func DecodeItems[T any](items []json.RawMessage) ([]T, error) {
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
