package webhook

import (
	"errors"
	"io"
	"net/http"

	"github.com/portcullis-dev/portcullis/internal/admission"
	"github.com/portcullis-dev/portcullis/internal/fault"
)

// read is the handler's step that reads and decodes the AdmissionReview,
// within MaxRequestBytes, and fills the decision from its request. False
// when it answered instead.
func (h *Handler) read(x *exchange) (*admission.Review, bool) {
	w, r := x.w, x.r
	if ct := r.Header.Get("Content-Type"); !isJSON(ct) {
		h.fail(w, x.d, fault.Errorf(fault.UnsupportedMediaType, "Content-Type %q is not supported: send application/json", ct))
		return nil, false
	}
	limit := h.MaxRequestBytes
	if limit <= 0 {
		limit = 8 << 20
	}
	_, step := h.startStep(x.ctx, "decode")
	var body []byte
	var err error
	if r.ContentLength > limit {
		// Refused before reading: the same answer the limited reader gives.
		err = &http.MaxBytesError{Limit: limit}
	} else {
		body, err = readBody(http.MaxBytesReader(w, r.Body, limit), r.ContentLength)
	}
	if err != nil {
		endStep(step, err)
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			h.fail(w, x.d, fault.Errorf(fault.TooLarge, "the request body is larger than %d bytes", limit))
			return nil, false
		}
		h.fail(w, x.d, fault.Errorf(fault.BadRequest, "reading the request body: %v", err))
		return nil, false
	}
	rev, err := admission.Decode(body)
	endStep(step, err)
	if err != nil {
		h.fail(w, x.d, err) // a BadRequest that says what is wrong
		return nil, false
	}
	fillRequest(x.d, rev.Request)
	rev.Request.ClusterLabels = x.id.ClusterLabels
	return rev, true
}

// readBody reads the whole body. The apiserver sends Content-Length, so
// the buffer is allocated once at its size: io.ReadAll's doublings from 512
// bytes allocated about 2.5 times the body, a fifth of all a request
// allocated, and every allocated byte is later work for the collector.
// Before any byte has arrived, a declared length is trusted only up to
// presizeMax: a stream that declares a large body and sends nothing must
// not hold much memory.
func readBody(r io.Reader, declared int64) ([]byte, error) {
	if declared <= 0 {
		return io.ReadAll(r)
	}
	// One byte more than declared, so that reaching the end takes no growth.
	buf := make([]byte, 0, min(declared, presizeMax)+1)
	for {
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)]
		}
		n, err := r.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if err == io.EOF {
			return buf, nil
		}
		if err != nil {
			return buf, err
		}
	}
}

// presizeMax is far above a typical review (a Pod is 5-10 KB) and far
// below --max-request-bytes.
const presizeMax = 64 << 10
