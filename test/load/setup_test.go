package load

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/portcullis-dev/portcullis/internal/database"
	"github.com/portcullis-dev/portcullis/internal/inventory"
	"github.com/portcullis-dev/portcullis/internal/pglocal"
	"github.com/portcullis-dev/portcullis/internal/policystore"
	"github.com/portcullis-dev/portcullis/internal/tenancy"
	"github.com/portcullis-dev/portcullis/internal/tlsutil"
)

const tenantName = "loadtest"

// fixture is the database, the tenant with its token, and the certificates
// both servers use.
type fixture struct {
	dir    string
	dbURL  string
	token  string
	certs  tlsutil.DevCerts
	caPool *x509.CertPool
	pg     *pglocal.Cluster
	pool   *pgxpool.Pool // the test's own, for setup and counting
	// bouncer, when set, stands between the gateways' pools and pg.
	bouncer *pgbouncer
	// tenants onboarded, the first being tenantName with its one cluster.
	tenants []onboarded
}

// onboarded is a tenant with the baseline policy set, and one cluster per
// credential with the corpus's namespaces and a bearer token.
type onboarded struct {
	name  string
	id    int64
	creds []clusterCred
}

type clusterCred struct {
	cluster string
	id      int64 // the credential's id
	token   string
}

// onboard creates tenant name with the given clusters, each with a token
// and the corpus's namespaces, and applies the baseline policy set.
func (f *fixture) onboard(ctx context.Context, t *testing.T, pool *pgxpool.Pool, name string, clusters ...string) onboarded {
	t.Helper()
	ten := tenancy.NewStore(pool, nil)
	tn, err := ten.CreateTenant(ctx, name, "Load test")
	if err != nil {
		t.Fatal(err)
	}
	out := onboarded{name: name, id: tn.ID}
	var nss []*corev1.Namespace
	for i, ns := range corpusNamespaces {
		nss = append(nss, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{
			Name: ns, UID: types.UID("0a0b0c0d-0000-4000-8000-00000000000" + strconv.Itoa(i)),
			CreationTimestamp: metav1.NewTime(time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)),
			Labels:            map[string]string{"kubernetes.io/metadata.name": ns},
		}, Status: corev1.NamespaceStatus{Phase: corev1.NamespaceActive}})
	}
	for _, name := range clusters {
		cl, err := ten.CreateCluster(ctx, tn.ID, name, nil)
		if err != nil {
			t.Fatal(err)
		}
		issued, err := ten.CreateToken(ctx, tn.ID, cl.ID, tenancy.CredentialOptions{})
		if err != nil {
			t.Fatal(err)
		}
		out.creds = append(out.creds, clusterCred{cluster: name, id: issued.ID, token: issued.Token})
		if err := inventory.New(pool).ReplaceNamespaces(ctx, tn.ID, cl.ID, nss); err != nil {
			t.Fatal(err)
		}
	}
	ps := policystore.New(pool)
	for _, file := range []string{"samples/baseline/policies.yaml", "samples/baseline/bindings.yaml"} {
		for _, doc := range bytes.Split(repoFile(t, file), []byte("\n---\n")) {
			if len(bytes.TrimSpace(doc)) == 0 {
				continue
			}
			if _, err := ps.Apply(ctx, tn.ID, "load-test", doc); err != nil {
				t.Fatalf("apply %s: %v\n%s", file, err, doc)
			}
		}
	}
	return out
}

// newFixture starts a throwaway PostgreSQL (Unix socket only, as pgtest
// does; it inherits this process's core, at niceness 10), migrates it, onboards a tenant
// with one cluster and a token, applies the baseline policy set and uploads
// the namespaces the corpus uses.
func newFixture(t *testing.T) *fixture {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	dir, err := os.MkdirTemp("", "portcullis-load-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	bin, err := pglocal.FindBinDir()
	if err != nil {
		t.Fatal(err)
	}
	pg, err := pglocal.New(bin, filepath.Join(dir, "pg", "data"), filepath.Join(dir, "pg", "sock"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(dir, "pg"), 0o755); err != nil {
		t.Fatal(err)
	}
	// The database is not part of either server: it takes the client's
	// core, where the recorder's COPY batches would otherwise preempt the
	// client and show as latency of whichever server is being measured.
	// At niceness 10 the client preempts it when it wakes, while the
	// database still gets a tenth of the core when both want it. At 19 it
	// got almost nothing once anything else busy shared the core (a stray
	// busy loop did once): its COPYs timed out and the gateway spilled,
	// which is not what the benchmark is about.
	pg.Fast, pg.Nice = true, 10
	if err := pg.Init(ctx); err != nil {
		t.Fatalf("initdb: %v", err)
	}
	if err := pg.StartChild(ctx); err != nil {
		t.Fatalf("postgres: %v", err)
	}
	t.Cleanup(func() { _ = pg.Stop(context.Background()) })
	f := &fixture{dir: dir, dbURL: pg.URL("postgres"), pg: pg}

	pool, err := database.Open(ctx, f.dbURL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close) // before the server stops
	f.pool = pool
	if _, err := database.Migrate(ctx, pool); err != nil {
		t.Fatalf("migrate: %v", err)
	}
	ten := f.onboard(ctx, t, pool, tenantName, "prod")
	f.token = ten.creds[0].token
	f.tenants = []onboarded{ten}

	f.makeCerts(t)
	return f
}

// makeCerts makes the serving certificate, before any server starts so
// that the gateways and the trivial webhook present the same one.
func (f *fixture) makeCerts(t *testing.T) {
	t.Helper()
	var err error
	if f.certs, err = tlsutil.EnsureDevCerts(filepath.Join(f.dir, "state", "tls")); err != nil {
		t.Fatal(err)
	}
	ca, err := os.ReadFile(f.certs.CAFile)
	if err != nil {
		t.Fatal(err)
	}
	f.caPool = x509.NewCertPool()
	if !f.caPool.AppendCertsFromPEM(ca) {
		t.Fatal("no CA certificate in " + f.certs.CAFile)
	}
}

// freeAddr returns a loopback address with a port free at the time.
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// server is one webhook process pinned to its core.
type server struct {
	name    string
	url     string // the validate URL
	metrics string // the gateway's /metrics URL
	pprof   string // its net/http/pprof address, when profiling
	cmd     *exec.Cmd
}

// proc is a server process; done is closed once it has exited.
type proc struct {
	cmd  *exec.Cmd
	done chan struct{}
}

// logsOpened holds the log files this test process has truncated: a server
// started again (a drill's restart) appends to its log.
var logsOpened sync.Map

// serverLog is where server name logs.
func serverLog(name string) string {
	return filepath.Join(os.TempDir(), "portcullis-load-"+name+".log")
}

// pinned runs argv on core cpu with GOMAXPROCS=1 and extra environment;
// with cpu < 0, unpinned with Go's GOMAXPROCS. taskset execs the program,
// so the pid is the server's. Cleanup stops it with SIGTERM (SIGKILL after
// 10s) unless it has exited already.
func pinned(t *testing.T, name string, cpu int, env []string, argv ...string) *proc {
	t.Helper()
	return pinnedAs(t, name, cpu, nil, env, argv...)
}

// pinnedAs is pinned as the user of cred (nil: this process's).
func pinnedAs(t *testing.T, name string, cpu int, cred *syscall.Credential, env []string, argv ...string) *proc {
	t.Helper()
	cmd := exec.Command(argv[0], argv[1:]...)
	if cpu >= 0 {
		cmd = exec.Command("taskset", append([]string{"-c", strconv.Itoa(cpu)}, argv...)...)
	}
	// The servers run with Go's defaults but for GOMAXPROCS: not the
	// client's GOGC.
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "GOGC=") && !strings.HasPrefix(kv, "GOMAXPROCS=") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	if cpu >= 0 {
		cmd.Env = append(cmd.Env, "GOMAXPROCS=1")
	}
	cmd.Env = append(cmd.Env, env...)
	flags := os.O_CREATE | os.O_WRONLY | os.O_APPEND
	if _, seen := logsOpened.LoadOrStore(name, true); !seen {
		flags |= os.O_TRUNC
	}
	logf, err := os.OpenFile(serverLog(name), flags, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", name, err)
	}
	p := &proc{cmd: cmd, done: make(chan struct{})}
	go func() { _ = cmd.Wait(); logf.Close(); close(p.done) }()
	t.Cleanup(func() {
		select {
		case <-p.done:
			return
		default:
		}
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-p.done:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-p.done
		}
	})
	return p
}

// gatewayArgs is the command line of a gateway on the given addresses.
// Behind the fixture's PgBouncer, its pool goes through it and its LISTEN
// connection goes direct.
func gatewayArgs(f *fixture, bin, stateDir, webhook, admin, metrics string, extra ...string) []string {
	db := []string{"--database-url", f.dbURL}
	if f.bouncer != nil {
		db = []string{"--database-url", f.bouncer.url, "--database-direct-url", f.dbURL}
	}
	return append(append([]string{bin, "--state-dir", stateDir}, db...), append([]string{
		"--webhook-addr", webhook, "--admin-addr", admin,
		"--metrics-addr", metrics, "--log-level", "warn"}, extra...)...)
}

// startGateway runs the gateway binary as server name, with extra flags.
func startGateway(t *testing.T, f *fixture, bin, name string, cpu int, pprofAddr string, extra ...string) *server {
	t.Helper()
	webhook, admin, metrics := freeAddr(t), freeAddr(t), freeAddr(t)
	var env []string
	if pprofAddr != "" {
		env = append(env, "PORTCULLIS_LOAD_PPROF_ADDR="+pprofAddr)
	}
	args := gatewayArgs(f, bin, filepath.Join(f.dir, "state"), webhook, admin, metrics,
		append([]string{"--dev", "--instance", "load"}, extra...)...)
	p := pinned(t, name, cpu, env, args...)
	waitHTTP(t, name, "http://"+metrics+"/readyz", nil)
	return &server{name: name, url: "https://" + webhook + "/t/" + tenantName + "/validate", cmd: p.cmd,
		metrics: "http://" + metrics + "/metrics", pprof: pprofAddr}
}

func startTrivial(t *testing.T, f *fixture, cpu int) *server {
	t.Helper()
	addr := freeAddr(t)
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	p := pinned(t, "trivial", cpu, []string{
		envTrivialAddr + "=" + addr, envTrivialCert + "=" + f.certs.CertFile,
		envTrivialKey + "=" + f.certs.KeyFile, envTrivialToken + "=" + f.token,
	}, self)
	hc := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: f.caPool}}}
	waitHTTP(t, "trivial webhook", "https://"+addr+"/healthz", hc)
	return &server{name: "trivial", url: "https://" + addr + "/validate", cmd: p.cmd}
}

// waitHTTP waits until url answers at all (any status for the trivial
// webhook, which has no health endpoint; 200 for /readyz).
func waitHTTP(t *testing.T, name, url string, hc *http.Client) {
	t.Helper()
	if hc == nil {
		hc = http.DefaultClient
	}
	deadline := time.Now().Add(60 * time.Second)
	var last string
	for time.Now().Before(deadline) {
		resp, err := hc.Get(url)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 || strings.HasPrefix(url, "https://") {
				return
			}
			last = resp.Status
		} else {
			last = err.Error()
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("%s not ready after 60s: %s (log in %s)", name, last, serverLog(name))
}

// cpuSeconds is the user+system CPU time of a process so far.
func cpuSeconds(pid int) float64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	s := string(b)
	fields := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	// After the command: state is field 3, utime 14, stime 15 (1-based).
	ut, _ := strconv.ParseFloat(fields[11], 64)
	st, _ := strconv.ParseFloat(fields[12], 64)
	return (ut + st) / 100 // USER_HZ is 100 on Linux
}

// selfCPUSeconds is this process's CPU time (the client).
func selfCPUSeconds() float64 {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()).Seconds()
}

// countingDialer counts the connections a transport opens, to show that
// the whole run used one.
type countingDialer struct {
	d     net.Dialer
	count atomic.Int64
}

func (c *countingDialer) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	c.count.Add(1)
	return c.d.DialContext(ctx, network, addr)
}

// recorderCounts reads the gateway's decision recorder counters from its
// /metrics, to show that recording kept up (nothing spilled or dropped).
func recorderCounts(s *server) string {
	resp, err := http.Get(s.metrics)
	if err != nil {
		return err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var out []string
	for _, line := range strings.Split(string(b), "\n") {
		for _, name := range []string{"queued", "written", "spilled", "replayed", "dropped"} {
			if strings.HasPrefix(line, "portcullis_decisions_"+name+"_total ") {
				out = append(out, name+" "+strings.Fields(line)[1])
			}
		}
	}
	return strings.Join(out, ", ")
}
