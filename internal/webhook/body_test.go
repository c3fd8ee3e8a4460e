package webhook

import (
	"bytes"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"testing/iotest"
)

func TestReadBody(t *testing.T) {
	body := strings.Repeat("0123456789", 1000)
	for _, tc := range []struct {
		name     string
		declared int64
	}{
		{"declared exactly", int64(len(body))},
		{"not declared", -1},
		{"declared zero", 0},
		{"declared short", 100},
		{"declared long", int64(len(body)) * 3},
		{"declared beyond the presize cap", 1 << 30},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// One byte per Read, so every path through the loop runs.
			got, err := readBody(iotest.OneByteReader(strings.NewReader(body)), tc.declared)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != body {
				t.Fatalf("read %d bytes, want the %d sent", len(got), len(body))
			}
		})
	}
	t.Run("declared exactly allocates once", func(t *testing.T) {
		n := testing.AllocsPerRun(20, func() {
			if _, err := readBody(strings.NewReader(body), int64(len(body))); err != nil {
				t.Fatal(err)
			}
		})
		// The buffer, and the strings.Reader escaping into the interface.
		if n > 2 {
			t.Errorf("%.0f allocations, want at most 2", n)
		}
	})
	t.Run("a large declared length with nothing sent holds little", func(t *testing.T) {
		got, err := readBody(strings.NewReader(""), 1<<30)
		if err != nil || len(got) != 0 {
			t.Fatalf("got %d bytes, %v", len(got), err)
		}
		if cap(got) > presizeMax+1 {
			t.Errorf("buffer of %d bytes for an empty body, want at most %d", cap(got), presizeMax+1)
		}
	})
	t.Run("over the limit", func(t *testing.T) {
		w := httptest.NewRecorder()
		_, err := readBody(http.MaxBytesReader(w, io.NopCloser(bytes.NewReader([]byte(body))), 1000), int64(len(body)))
		var tooBig *http.MaxBytesError
		if !errors.As(err, &tooBig) {
			t.Fatalf("err = %v, want *http.MaxBytesError", err)
		}
	})
	t.Run("read error", func(t *testing.T) {
		boom := errors.New("connection reset")
		_, err := readBody(io.MultiReader(strings.NewReader("abc"), iotest.ErrReader(boom)), 100)
		if !errors.Is(err, boom) {
			t.Fatalf("err = %v, want %v", err, boom)
		}
	})
}
