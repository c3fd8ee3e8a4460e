package ui

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"

	"github.com/portcullis-dev/portcullis/internal/apiclient"
	"github.com/portcullis-dev/portcullis/internal/apiv1"
)

// p joins escaped path segments under /api/v1.
func p(segments ...string) string { return apiclient.Path(segments...) }

// call runs one admin API request in-process (apiclient.InProcess) as
// token, or as the token that ctx names (uisession.WithToken), and decodes
// a success answer into out (unless nil; a *[]byte gets the answer as
// sent). body is sent as JSON unless it is a []byte, which is sent as
// YAML. An error answer is an *apiclient.Error, which unwraps to the
// *fault.Error that the pages show (fail).
func (s *Server) call(ctx context.Context, token, method, path string, q url.Values, body, out any) error {
	req := apiclient.Request{Method: method, Path: path, Query: q}
	switch b := body.(type) {
	case nil:
	case []byte:
		req.Body, req.ContentType = b, "application/yaml"
	default:
		j, err := json.Marshal(b)
		if err != nil {
			return err
		}
		req.Body = j
	}
	c := &apiclient.Client{Token: token, HTTP: apiclient.InProcess(s.API)}
	res, err := c.Do(ctx, req)
	if err != nil || out == nil || len(res) == 0 {
		return err
	}
	if raw, ok := out.(*[]byte); ok {
		*raw = res
		return nil
	}
	if err := json.Unmarshal(res, out); err != nil {
		return fmt.Errorf("the server's answer to %s %s: %w", method, path, err)
	}
	return nil
}

// whoAmI is GET /api/v1/whoami, with what the templates ask of it.
type whoAmI struct{ apiv1.WhoAmI }

func (w whoAmI) Operator() bool { return w.Role == "operator" }

// CanChange reports whether the role may change a tenant's objects; the
// API decides, this only hides buttons that would be refused.
func (w whoAmI) CanChange() bool { return w.Role == "operator" || w.Role == "admin" }
