// Package api serves the admin REST API under /api/v1 on the admin
// listener. Every error is a Kubernetes-style Status.
package api

import (
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/portcullis-dev/portcullis/internal/adminauth"
)

// Server holds what the handlers need.
type Server struct {
	Tokens *adminauth.Store
	Logger *slog.Logger
}

// Handler returns the API's routes. Requests outside them get a 404 Status.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.Handle("GET /api/v1/whoami", s.authenticated(s.whoami))
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeStatus(w, http.StatusNotFound, metav1.StatusReasonNotFound, "no route for "+r.Method+" "+r.URL.Path)
	})
	return mux
}

func (s *Server) authenticated(h func(http.ResponseWriter, *http.Request, adminauth.Principal)) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		token, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		if !ok {
			writeStatus(w, http.StatusUnauthorized, metav1.StatusReasonUnauthorized, "an admin token is required: Authorization: Bearer <token>")
			return
		}
		p, err := s.Tokens.Authenticate(r.Context(), strings.TrimSpace(token))
		if errors.Is(err, adminauth.ErrUnauthenticated) {
			writeStatus(w, http.StatusUnauthorized, metav1.StatusReasonUnauthorized, err.Error())
			return
		}
		if err != nil {
			s.Logger.Error("admin authentication failed", "error", err)
			writeStatus(w, http.StatusServiceUnavailable, metav1.StatusReasonServiceUnavailable, "the token store is unavailable; retry shortly")
			return
		}
		h(w, r, p)
	})
}

func (s *Server) whoami(w http.ResponseWriter, _ *http.Request, p adminauth.Principal) {
	writeJSON(w, http.StatusOK, map[string]any{"name": p.Name, "role": p.Role, "tokenID": p.TokenID, "expiresAt": p.ExpiresAt})
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(v)
}

func writeStatus(w http.ResponseWriter, code int, reason metav1.StatusReason, msg string) {
	writeJSON(w, code, metav1.Status{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Status"},
		Status:   metav1.StatusFailure,
		Code:     int32(code),
		Reason:   reason,
		Message:  msg,
	})
}
