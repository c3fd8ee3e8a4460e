package e2e

import (
	"bytes"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/portcullis-dev/portcullis/internal/pgtest"
)

// gateway is a running gateway process and the admin CLI pointed at it
// with an operator token (PORTCULLIS_SERVER, _TOKEN and _CA_FILE), set up
// as scripts/run.sh sets them up.
type gateway struct {
	admin string
	env   []string
	log   string
	// stop ends the gateway and waits for it; the test's cleanup calls it
	// too.
	stop func()
}

// startGateway migrates nothing (pgtest hands out a migrated database),
// bootstraps an operator token with `admin bootstrap`, and starts the
// gateway with development certificates on loopback ports.
func startGateway(t *testing.T, gatewayBin, adminBin string) *gateway {
	t.Helper()
	dbURL := pgtest.URL(t)
	state := t.TempDir()
	g := &gateway{admin: adminBin, log: filepath.Join(state, "gateway.log")}
	home := t.TempDir()
	base := append(os.Environ(), "HOME="+home, "PORTCULLIS_CONFIG="+filepath.Join(home, "config.yaml"))

	boot := exec.Command(adminBin, "bootstrap", "--database-url", dbURL)
	boot.Env = base
	token, err := boot.Output()
	if err != nil {
		t.Fatalf("admin bootstrap: %v\n%s", err, stderrOf(err))
	}

	webhook, admin, metrics := freePort(t), freePort(t), freePort(t)
	addr := func(p int) string { return "127.0.0.1:" + strconv.Itoa(p) }
	logFile, err := os.Create(g.log)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(gatewayBin, "--dev", "--state-dir", state, "--database-url", dbURL,
		"--webhook-addr", addr(webhook), "--admin-addr", addr(admin), "--metrics-addr", addr(metrics))
	cmd.Stdout, cmd.Stderr = logFile, logFile
	// Throwaway: it dies with the test binary, also when that is killed.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited, waitErr := make(chan struct{}), error(nil)
	go func() { waitErr = cmd.Wait(); logFile.Close(); close(exited) }()
	g.stop = sync.OnceFunc(func() { terminate(cmd, exited) })
	t.Cleanup(func() {
		g.stop()
		if t.Failed() {
			t.Logf("gateway log (%s), last lines:\n%s", g.log, tail(g.log, 40))
		}
	})
	start := time.Now()
	for {
		select {
		case <-exited:
			t.Fatalf("gateway exited before it was ready: %v\n%s", waitErr, tail(g.log, 40))
		default:
		}
		resp, err := http.Get("http://" + addr(metrics) + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				break
			}
		}
		if time.Since(start) > time.Minute {
			t.Fatalf("gateway not ready after a minute: %v\n%s", err, tail(g.log, 40))
		}
		time.Sleep(100 * time.Millisecond)
	}
	g.env = append(base,
		"PORTCULLIS_SERVER=https://localhost:"+strconv.Itoa(admin),
		"PORTCULLIS_TOKEN="+strings.TrimSpace(string(token)),
		"PORTCULLIS_CA_FILE="+filepath.Join(state, "tls", "ca.crt"))
	return g
}

// run runs the admin CLI and fails the test unless it succeeds.
func (g *gateway) run(t *testing.T, args ...string) string {
	t.Helper()
	return g.runInput(t, nil, args...)
}

// runInput is run with stdin, for `-f -`.
func (g *gateway) runInput(t *testing.T, stdin []byte, args ...string) string {
	t.Helper()
	cmd := exec.Command(g.admin, args...)
	cmd.Env = g.env
	cmd.Stdin = bytes.NewReader(stdin)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("admin %s: %v\n%s%s", strings.Join(args, " "), err, out, stderr.Bytes())
	}
	return string(out)
}

func stderrOf(err error) string {
	if ee, ok := err.(*exec.ExitError); ok {
		return string(ee.Stderr)
	}
	return ""
}
