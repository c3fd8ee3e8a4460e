// Package deadline bounds how long a request may run, and answers the one
// that runs longer. Without it, a handler that outlived the server's
// WriteTimeout was cut off with a reset stream: the client got no Status
// and nothing was logged (an apply of 6,000 objects, in November 2026).
package deadline

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/portcullis-dev/portcullis/internal/fault"
)

// Handler runs Next with a context that ends after Timeout. Next writes
// into a buffer; if it has not finished by then, the client gets a 504
// Status instead and the request is logged. Next keeps running until it
// notices its context, and whatever it writes afterwards is dropped.
//
// Timeout must be shorter than the server's WriteTimeout, so that the
// answer is written before the connection's deadline.
type Handler struct {
	Next    http.Handler
	Timeout time.Duration
	Logger  *slog.Logger
}

func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	ctx, cancel := context.WithTimeout(r.Context(), h.Timeout)
	defer cancel()
	bw := &writer{header: make(http.Header)}
	done := make(chan struct{})
	panicked := make(chan any, 1)
	go func() {
		defer func() {
			if p := recover(); p != nil {
				panicked <- p
				return
			}
			close(done)
		}()
		h.Next.ServeHTTP(bw, r.WithContext(ctx))
	}()
	select {
	case p := <-panicked:
		// The handlers recover their own panics; what reaches here is
		// http.ErrAbortHandler or a bug, which net/http must see.
		panic(p)
	case <-done:
		bw.mu.Lock()
		defer bw.mu.Unlock()
		dst := w.Header()
		for k, v := range bw.header {
			dst[k] = v
		}
		if bw.code == 0 {
			bw.code = http.StatusOK
		}
		w.WriteHeader(bw.code)
		_, _ = w.Write(bw.body.Bytes())
	case <-ctx.Done():
		bw.mu.Lock()
		defer bw.mu.Unlock()
		bw.abandoned = true
		if !errors.Is(ctx.Err(), context.DeadlineExceeded) || r.Context().Err() != nil {
			// The client went away first: there is no one to answer.
			h.Logger.Info("request abandoned by its client", "method", r.Method, "path", r.URL.Path,
				"elapsed", time.Since(start).Round(time.Millisecond).String())
			return
		}
		h.Logger.Warn("request cut off at its deadline", "method", r.Method, "path", r.URL.Path,
			"timeout", h.Timeout.String(), "remote", r.RemoteAddr)
		st := fault.Status(fault.Errorf(fault.Timeout,
			"the request did not complete within %s and was abandoned: if it was a change, check whether it was made before retrying; split a large apply into several", h.Timeout))
		body, _ := json.Marshal(st)
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Content-Length", strconv.Itoa(len(body)))
		w.WriteHeader(int(st.Code))
		_, _ = w.Write(body)
	}
}

// writer buffers a response until the handler finishes; once the request
// is abandoned, it drops what the handler still writes.
type writer struct {
	mu        sync.Mutex
	header    http.Header
	code      int
	body      bytes.Buffer
	abandoned bool
}

func (w *writer) Header() http.Header { return w.header }

func (w *writer) WriteHeader(code int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.code == 0 && !w.abandoned {
		w.code = code
	}
}

func (w *writer) Write(b []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.abandoned {
		return 0, http.ErrHandlerTimeout
	}
	if w.code == 0 {
		w.code = http.StatusOK
	}
	return w.body.Write(b)
}
