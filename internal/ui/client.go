package ui

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/portcullis-dev/portcullis/internal/apiv1"
)

// apiError is an error answer of the admin API: its Status, with the
// causes that name fields.
type apiError struct {
	Code    int
	Message string
	Reason  string
	Causes  []cause
}

type cause struct {
	Field   string `json:"field"`
	Message string `json:"message"`
	Reason  string `json:"reason"`
}

func (e *apiError) Error() string { return e.Message }

// buffer is the ResponseWriter of an in-process API call.
type buffer struct {
	header http.Header
	code   int
	body   bytes.Buffer
}

func (b *buffer) Header() http.Header { return b.header }
func (b *buffer) Write(p []byte) (int, error) {
	if b.code == 0 {
		b.code = http.StatusOK
	}
	return b.body.Write(p)
}
func (b *buffer) WriteHeader(code int) {
	if b.code == 0 {
		b.code = code
	}
}

// p joins escaped path segments under /api/v1.
func p(segments ...string) string {
	var sb strings.Builder
	sb.WriteString("/api/v1")
	for _, s := range segments {
		sb.WriteByte('/')
		sb.WriteString(url.PathEscape(s))
	}
	return sb.String()
}

// call runs one admin API request in-process as token (or as the token
// that ctx names, uisession.WithToken), and decodes a
// success answer into out (unless nil). body is sent as JSON unless it is
// a []byte, which is sent as YAML.
func (s *Server) call(ctx context.Context, token, method, path string, q url.Values, body, out any) error {
	var rd *bytes.Reader
	ctype := ""
	switch b := body.(type) {
	case nil:
		rd = bytes.NewReader(nil)
	case []byte:
		rd, ctype = bytes.NewReader(b), "application/yaml"
	default:
		j, err := json.Marshal(b)
		if err != nil {
			return err
		}
		rd, ctype = bytes.NewReader(j), "application/json"
	}
	target := path
	if len(q) > 0 {
		target += "?" + q.Encode()
	}
	req, err := http.NewRequestWithContext(ctx, method, target, rd)
	if err != nil {
		return err
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if ctype != "" {
		req.Header.Set("Content-Type", ctype)
	}
	req.RemoteAddr = "ui"
	res := &buffer{header: http.Header{}}
	s.API.ServeHTTP(res, req)
	if res.code == 0 {
		res.code = http.StatusOK
	}
	if res.code >= 300 {
		var st struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
			Reason  string `json:"reason"`
			Details *struct {
				Causes []cause `json:"causes"`
			} `json:"details"`
		}
		if err := json.Unmarshal(res.body.Bytes(), &st); err != nil || st.Message == "" {
			return &apiError{Code: res.code, Message: fmt.Sprintf("the admin API answered %d", res.code)}
		}
		e := &apiError{Code: res.code, Message: st.Message, Reason: st.Reason}
		if st.Details != nil {
			e.Causes = st.Details.Causes
		}
		return e
	}
	if out == nil || res.code == http.StatusNoContent {
		return nil
	}
	if raw, ok := out.(*[]byte); ok {
		*raw = res.body.Bytes()
		return nil
	}
	if err := json.Unmarshal(res.body.Bytes(), out); err != nil {
		return fmt.Errorf("decode %s %s: %w", method, path, err)
	}
	return nil
}

// whoAmI is GET /api/v1/whoami, with what the templates ask of it.
type whoAmI struct{ apiv1.WhoAmI }

func (w whoAmI) Operator() bool { return w.Role == "operator" }

// CanChange reports whether the role may change a tenant's objects; the
// API decides, this only hides buttons that would be refused.
func (w whoAmI) CanChange() bool { return w.Role == "operator" || w.Role == "admin" }
