package e2e

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"
)

// repoRoot is the main module, two levels up from this package.
const repoRoot = "../.."

// EnvCache names the directory that keeps the built kube-apiserver between
// runs (default: the user's cache directory).
const EnvCache = "PORTCULLIS_E2E_CACHE"

// goBuild runs `go build -o out pkgs...` in dir. `go test` puts its own
// toolchain first on the PATH of the test, so this is the same go.
func goBuild(t *testing.T, dir, out string, pkgs ...string) {
	t.Helper()
	start := time.Now()
	cmd := exec.Command("go", append([]string{"build", "-o", out}, pkgs...)...)
	cmd.Dir = dir
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build %s: %v\n%s", strings.Join(pkgs, " "), err, b)
	}
	t.Logf("built %s in %v", strings.Join(pkgs, " "), time.Since(start).Round(time.Second))
}

// buildPortcullis builds the gateway and the admin CLI from the working
// tree into a fresh directory: the test runs the code under test.
func buildPortcullis(t *testing.T) (gateway, admin string) {
	dir := t.TempDir()
	goBuild(t, repoRoot, dir+string(filepath.Separator), "./cmd/gateway", "./cmd/admin")
	return filepath.Join(dir, "gateway"), filepath.Join(dir, "admin")
}

// kubeAPIServer returns the kube-apiserver binary of the k8s.io/kubernetes
// version in go.mod, building it once into the cache directory. The file
// name carries a hash of go.sum and the Go version, so a change of either
// builds a new one. Building it cold takes many minutes (see
// docs/development.md), and even from a warm build cache linking it takes
// about 25 s, as long as the three apiservers of the test run.
func kubeAPIServer(t *testing.T) string {
	t.Helper()
	dir := os.Getenv(EnvCache)
	if dir == "" {
		base, err := os.UserCacheDir()
		if err != nil {
			t.Fatalf("no cache directory (set %s): %v", EnvCache, err)
		}
		dir = filepath.Join(base, "portcullis", "e2e")
	}
	sum, err := os.ReadFile("go.sum")
	if err != nil {
		t.Fatal(err)
	}
	h := sha256.Sum256(append(sum, runtime.Version()...))
	bin := filepath.Join(dir, "kube-apiserver-"+hex.EncodeToString(h[:6]))
	if _, err := os.Stat(bin); err == nil {
		return bin
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	// Built beside its final name and renamed, so that an interrupted build
	// leaves no half-written binary to be picked up next time.
	tmp := bin + ".tmp" + time.Now().Format("150405.000000")
	goBuild(t, ".", tmp, "k8s.io/kubernetes/cmd/kube-apiserver")
	if err := os.Rename(tmp, bin); err != nil {
		t.Fatal(err)
	}
	return bin
}
