package apiclient

import (
	"bytes"
	"io"
	"net/http"
)

// InProcess is a Doer that serves each request with h in this process:
// the web UI's way to call the admin API, so that the API alone decides
// what a user may see and do. Requests carry only a path (Client.Base is
// ""); their RemoteAddr is "ui", for the API's logs.
func InProcess(h http.Handler) Doer { return inProcess{h} }

type inProcess struct{ h http.Handler }

func (d inProcess) Do(req *http.Request) (*http.Response, error) {
	req = req.Clone(req.Context())
	req.RemoteAddr = "ui"
	req.RequestURI = req.URL.RequestURI()
	if req.Body == nil {
		// A server's request always has a body, as handlers expect.
		req.Body = http.NoBody
	}
	w := &recorder{header: http.Header{}}
	d.h.ServeHTTP(w, req)
	if w.code == 0 {
		w.code = http.StatusOK
	}
	return &http.Response{
		Status:        http.StatusText(w.code),
		StatusCode:    w.code,
		Proto:         "HTTP/1.1",
		ProtoMajor:    1,
		ProtoMinor:    1,
		Header:        w.header,
		Body:          io.NopCloser(&w.body),
		ContentLength: int64(w.body.Len()),
		Request:       req,
	}, nil
}

// recorder is the ResponseWriter of an in-process call.
type recorder struct {
	header http.Header
	code   int
	body   bytes.Buffer
}

func (r *recorder) Header() http.Header { return r.header }

func (r *recorder) Write(p []byte) (int, error) {
	if r.code == 0 {
		r.code = http.StatusOK
	}
	return r.body.Write(p)
}

func (r *recorder) WriteHeader(code int) {
	if r.code == 0 {
		r.code = code
	}
}
