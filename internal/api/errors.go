package api

import (
	"net/http"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/portcullis-dev/portcullis/internal/fault"
)

// tenantNotFound is the one answer for a tenant that does not exist and for
// one the caller may not see.
func tenantNotFound(name string) *fault.Error {
	return fault.Errorf(fault.NotFound, "tenant %q not found", name)
}

// status is the Status sent for any error a handler returns, and whether
// the error is the server's (and so logged).
func status(err error) (metav1.Status, bool) {
	st := fault.Status(err)
	return st, st.Code >= http.StatusInternalServerError
}

func (s *Server) writeError(w http.ResponseWriter, r *http.Request, err error) {
	st, internal := status(err)
	if internal {
		s.Logger.Error("admin API error", "method", r.Method, "path", r.URL.Path, "status", st.Code, "error", err)
	}
	writeJSON(w, int(st.Code), st)
}
