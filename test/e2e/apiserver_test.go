package e2e

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// apiServer is a running kube-apiserver process.
type apiServer struct {
	config *rest.Config
	log    string
	// stop ends the process and waits for it; the test's cleanup calls it
	// too.
	stop func()
}

// terminate stops a process the test started, politely first, and waits
// until exited is closed.
func terminate(cmd *exec.Cmd, exited <-chan struct{}) {
	_ = cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-exited:
	case <-time.After(30 * time.Second):
		_ = cmd.Process.Kill()
		<-exited
	}
}

// startAPIServer runs bin against etcd under its own key prefix, with the
// gateway's AdmissionConfiguration as its only admission setting. Every
// other flag is what any apiserver needs to start: serving certificate,
// client CA, service-account keys, etcd. Its log goes to a file, printed
// when the test fails.
func startAPIServer(t *testing.T, bin, etcd, prefix, admissionConfig string) *apiServer {
	t.Helper()
	dir := t.TempDir()
	p := newPKI(t, dir)
	port := freePort(t)
	args := []string{
		"--etcd-servers=" + etcd,
		"--etcd-prefix=/" + prefix,
		"--bind-address=127.0.0.1",
		"--advertise-address=127.0.0.1",
		"--secure-port=" + strconv.Itoa(port),
		"--cert-dir=" + dir,
		"--tls-cert-file=" + p.servingCert,
		"--tls-private-key-file=" + p.servingKey,
		"--client-ca-file=" + p.caFile,
		"--authorization-mode=Node,RBAC",
		"--service-account-issuer=https://kubernetes.default.svc",
		"--service-account-key-file=" + p.saKey,
		"--service-account-signing-key-file=" + p.saKey,
		"--service-cluster-ip-range=10.96.0.0/24",
		// The "kubernetes" Service's endpoint would be 127.0.0.1, which
		// Endpoints validation refuses.
		"--endpoint-reconciler-type=none",
		"--admission-control-config-file=" + admissionConfig,
	}
	s := &apiServer{log: filepath.Join(dir, "kube-apiserver.log")}
	logFile, err := os.Create(s.log)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	// Throwaway: it dies with the test binary, also when that is killed.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	// Only loopback: a proxy in the environment must not see the webhook
	// calls or the etcd traffic.
	cmd.Env = append(os.Environ(), "NO_PROXY=127.0.0.1,localhost,::1", "no_proxy=127.0.0.1,localhost,::1")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited, waitErr := make(chan struct{}), error(nil)
	go func() { waitErr = cmd.Wait(); logFile.Close(); close(exited) }()
	s.stop = sync.OnceFunc(func() { terminate(cmd, exited) })
	t.Cleanup(func() {
		s.stop()
		if t.Failed() {
			t.Logf("kube-apiserver log, last warnings and errors:\n%s", problems(s.log, 40))
		}
	})

	s.config = &rest.Config{
		Host:            "https://127.0.0.1:" + strconv.Itoa(port),
		TLSClientConfig: rest.TLSClientConfig{CAData: p.caPEM, CertData: p.adminCert, KeyData: p.adminKey},
		QPS:             100, Burst: 200,
	}
	cs, err := kubernetes.NewForConfig(s.config)
	if err != nil {
		t.Fatal(err)
	}
	client := cs.Discovery().RESTClient()
	start := time.Now()
	for {
		select {
		case <-exited:
			t.Fatalf("kube-apiserver exited before it was ready: %v\n%s", waitErr, tail(s.log, 60))
		default:
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		body, err := client.Get().AbsPath("/readyz").DoRaw(ctx)
		cancel()
		if err == nil && string(body) == "ok" {
			break
		}
		if time.Since(start) > 2*time.Minute {
			t.Fatalf("kube-apiserver not ready after %v: %v %s\n%s", time.Since(start), err, body, tail(s.log, 60))
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Logf("kube-apiserver ready at %s in %v", s.config.Host, time.Since(start).Round(100*time.Millisecond))
	return s
}

// problems returns the last n warning and error lines of a klog file: the
// rest of an apiserver's log is start-up and shutdown chatter.
func problems(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return fmt.Sprint(err)
	}
	var lines []string
	for _, l := range strings.Split(string(b), "\n") {
		// Every start warns about each API version it does not serve.
		if strings.Contains(l, "Skipping API") {
			continue
		}
		if len(l) > 5 && strings.ContainsRune("EWF", rune(l[0])) && l[1] >= '0' && l[1] <= '9' {
			lines = append(lines, l)
		}
	}
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// tail returns the last n lines of a file.
func tail(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return fmt.Sprint(err)
	}
	lines := bytes.Split(bytes.TrimRight(b, "\n"), []byte("\n"))
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.TrimSpace(string(bytes.Join(lines, []byte("\n"))))
}
