package evaluator

import (
	"bufio"
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// The CEL libraries must be the exact versions k8s.io/apiserver was built
// with: another cel-go changes costs and library behaviour. A dependency
// bump elsewhere (MVS picks the highest requirement) would silently move
// them, so this test compares the linked versions with the apiserver's
// go.mod.
func TestCELVersionsMatchTheApiserver(t *testing.T) {
	// The versions the go command selects for this module's builds.
	listed, err := exec.Command("go", "list", "-m", "-f", "{{.Path}} {{if .Replace}}{{.Replace.Version}}{{else}}{{.Version}}{{end}}",
		"k8s.io/apiserver", "github.com/google/cel-go", "cel.dev/expr").Output()
	if err != nil {
		t.Fatalf("go list -m: %v", err)
	}
	linked := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(listed)), "\n") {
		if f := strings.Fields(line); len(f) == 2 {
			linked[f[0]] = f[1]
		}
	}
	apiserver := linked["k8s.io/apiserver"]
	if apiserver == "" {
		t.Fatalf("k8s.io/apiserver not in the build list: %q", listed)
	}
	out, err := exec.Command("go", "env", "GOMODCACHE").Output()
	if err != nil {
		t.Fatalf("go env GOMODCACHE: %v", err)
	}
	modFile := filepath.Join(strings.TrimSpace(string(out)), "cache", "download", "k8s.io", "apiserver", "@v", apiserver+".mod")
	mod, err := os.ReadFile(modFile)
	if err != nil {
		t.Fatalf("read the apiserver's go.mod: %v", err)
	}
	want := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(mod))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) >= 2 && (f[0] == "github.com/google/cel-go" || f[0] == "cel.dev/expr") {
			want[f[0]] = f[1]
		}
	}
	if len(want) != 2 {
		t.Fatalf("the apiserver's go.mod names %v", want)
	}
	for path, v := range want {
		if linked[path] != v {
			t.Errorf("%s is %s, but k8s.io/apiserver %s is built with %s: pin it in go.mod", path, linked[path], apiserver, v)
		}
	}
}
