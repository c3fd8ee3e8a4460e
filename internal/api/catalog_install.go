package api

import (
	"bytes"
	"io"

	"github.com/portcullis-dev/portcullis/internal/apiv1"
	"github.com/portcullis-dev/portcullis/internal/catalog"
	"github.com/portcullis-dev/portcullis/internal/fault"
	"github.com/portcullis-dev/portcullis/internal/policystore"
)

// installCatalog applies an entry through the policy store, as POST
// .../apply would, so that its objects are validated, versioned and
// audited like any other. An entry already installed is refused (an
// upgrade keeps the tenant's param values, an install would not), and so
// is one whose objects' names the tenant already uses.
func (s *Server) installCatalog(c *call) error {
	e, dryRun, err := catalogTarget(c)
	if err != nil {
		return err
	}
	// The options are optional: an empty body (of any length header,
	// chunked too) takes the defaults.
	var req apiv1.CatalogInstall
	body, err := c.body()
	if err != nil {
		return err
	}
	if len(bytes.TrimSpace(body)) > 0 {
		c.r.Body = io.NopCloser(bytes.NewReader(body))
		if err := c.decode(&req); err != nil {
			return err
		}
	}
	objs, err := e.Objects(catalog.Options{Action: req.Action, ClusterSelector: req.ClusterSelector})
	if err != nil {
		return err
	}
	for _, o := range objs {
		ref := refOf(o)
		have, err := s.Policies.Get(c.ctx(), c.tenant.ID, ref)
		switch {
		case fault.ErrorCode(err) == fault.NotFound:
			continue
		case err != nil:
			return err
		case have.Object.GetLabels()[catalog.LabelEntry] == e.Name:
			return fault.Errorf(fault.AlreadyExists, "catalog entry %s is already installed (version %s): upgrade it instead",
				e.Name, have.Object.GetAnnotations()[catalog.AnnotationVersion])
		}
		return fault.Errorf(fault.AlreadyExists, "%s %s already exists and was not installed from catalog entry %s: delete or rename it first",
			ref.Kind, qualified(ref), e.Name)
	}
	docs, err := marshalAll(objs)
	if err != nil {
		return err
	}
	res := apiv1.CatalogResult{Entry: e.Name, ToVersion: e.Version}
	if res.ApplyResult, _, err = s.applyCatalog(c, e, docs, nil, dryRun); err != nil {
		return err
	}
	return c.json(res)
}

func qualified(r policystore.Ref) string {
	if r.Namespace != "" {
		return r.Namespace + "/" + r.Name
	}
	return r.Name
}
