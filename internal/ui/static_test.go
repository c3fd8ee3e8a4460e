package ui

import (
	"crypto/sha256"
	"encoding/hex"
	"io/fs"
	"strings"
	"testing"

	"github.com/portcullis-dev/portcullis/web"
)

// TestVendoredChecksums holds the vendored scripts to the SHA256SUMS that
// web/build/build.sh wrote when it built them from the lockfile: a file
// edited by hand, or added without its licence, fails here.
func TestVendoredChecksums(t *testing.T) {
	sums, err := fs.ReadFile(web.FS, "static/vendor/SHA256SUMS")
	if err != nil {
		t.Fatal(err)
	}
	listed := map[string]bool{}
	for _, line := range strings.Split(strings.TrimSpace(string(sums)), "\n") {
		sum, name, ok := strings.Cut(line, "  ")
		if !ok {
			t.Fatalf("bad SHA256SUMS line %q", line)
		}
		name = strings.TrimPrefix(name, "./")
		listed[name] = true
		b, err := fs.ReadFile(web.FS, "static/vendor/"+name)
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		got := sha256.Sum256(b)
		if hex.EncodeToString(got[:]) != sum {
			t.Errorf("%s: checksum %x, SHA256SUMS says %s", name, got, sum)
		}
	}
	err = fs.WalkDir(web.FS, "static/vendor", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || p == "static/vendor/SHA256SUMS" {
			return err
		}
		if !listed[strings.TrimPrefix(p, "static/vendor/")] {
			t.Errorf("%s is not in SHA256SUMS", p)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, lic := range []string{"htmx.org@2.0.11.LICENSE", "uplot@1.6.32.LICENSE", "codemirror@6.0.2.LICENSE"} {
		if !listed["licenses/"+lic] {
			t.Errorf("licence %s is not vendored", lic)
		}
	}
}

func TestFieldLine(t *testing.T) {
	text := []byte("a: 1\n---\nkind: X\nspec:\n  validations:\n  - expression: x\n    message: m\n  - expression: y\n")
	for _, c := range []struct {
		field string
		want  int
	}{
		{"documents[0].a", 1},
		{"documents[1].kind", 3},
		{"documents[1].spec.validations[1].expression", 8},
		{"documents[1].spec.validations[0].message", 7},
		{"documents[1].spec.validations[0].missing", 6},
		{"documents[1].spec.nothing.deeper", 4},
		{"documents[5].kind", 0},
		{"", 0},
	} {
		if got := fieldLine(text, c.field); got != c.want {
			t.Errorf("fieldLine(%q) = %d, want %d", c.field, got, c.want)
		}
	}
	if got := fieldLine([]byte("kind: X\nspec:\n  a: 1\n"), "spec.a"); got != 3 {
		t.Errorf("one document without documents[i]: %d, want 3", got)
	}
}
