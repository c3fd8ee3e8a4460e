package load

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/portcullis-dev/portcullis/internal/testutil"
)

// Environment of the drills (scripts/drills.sh, make drills).
const (
	envDrills      = "PORTCULLIS_DRILLS"          // 1 runs every drill; fast runs the fast ones only
	envDrillRate   = "PORTCULLIS_DRILL_RATE"      // requests per second (default 500)
	envDrillOutage = "PORTCULLIS_DRILL_OUTAGE"    // seconds of the Postgres outage (default 60)
	shutdownDelay  = "2s"                         // each replica's --shutdown-delay
	haproxyInter   = 200 * time.Millisecond       // health check interval
	haproxyRise    = 2                            // checks to mark a replica up
	drillTenants   = 2                            // tenants of the load, each with...
	drillClusters  = 2                            // ...this many clusters, one client each
	drillTimeout   = 10 * time.Second             // the client's timeout, an apiserver's default
	drillSettle    = 90 * time.Second             // the most decisions may take to be stored
	drillReady     = 60 * time.Second             // the most a replica may take to become ready
	drillPolicyMax = time.Second                  // drill 4's target
	drillRevokeMax = 2 * time.Second              // drill 6's target
	drillPrefix    = "drill"                      // the uids of drill requests start with it
	drillProbeNS   = "shop"                       // drill 4's probe namespace
	drillProbeKey  = "portcullis.dev/drill-probe" // drill 4's probe label
)

// drillsEnabled skips t unless the drills are asked for; fast drills also
// run under PORTCULLIS_DRILLS=fast.
func drillsEnabled(t *testing.T, fast bool) {
	t.Helper()
	switch v := os.Getenv(envDrills); {
	case v == "1", v == "fast" && fast:
	default:
		t.Skip("a drill: set " + envDrills + "=1 (or =fast for the fast ones), or run scripts/drills.sh")
	}
}

// replica is one gateway process with fixed addresses and state
// directory, so that a restarted replica is the same replica.
type replica struct {
	name, bin               string
	webhook, admin, metrics string // loopback host:port
	stateDir                string
	f                       *fixture
	extra                   []string
	p                       *proc
	haproxyName             string
}

func newReplica(t *testing.T, f *fixture, bin, name string, extra ...string) *replica {
	t.Helper()
	r := &replica{name: name, bin: bin, f: f, extra: extra, haproxyName: name,
		webhook: freeAddr(t), admin: freeAddr(t), metrics: freeAddr(t),
		stateDir: filepath.Join(f.dir, "state-"+name)}
	return r
}

// start runs the replica; it does not wait for it to be ready.
func (r *replica) start(t *testing.T) {
	t.Helper()
	args := gatewayArgs(r.f, r.bin, r.stateDir, r.webhook, r.admin, r.metrics,
		append([]string{"--tls-cert", r.f.certs.CertFile, "--tls-key", r.f.certs.KeyFile,
			"--shutdown-delay", shutdownDelay, "--instance", r.name}, r.extra...)...)
	r.p = pinned(t, r.name, -1, nil, args...)
}

// waitReady waits until /readyz answers 200 and returns how long it took.
func (r *replica) waitReady(t *testing.T) time.Duration {
	t.Helper()
	start := time.Now()
	testutil.Eventually(t, drillReady, r.name+" ready", func() bool {
		select {
		case <-r.p.done:
			t.Fatalf("%s exited (log: %s)", r.name, serverLog(r.name))
		default:
		}
		return httpStatus("http://"+r.metrics+"/readyz") == http.StatusOK
	})
	return time.Since(start)
}

// stop sends SIGTERM and waits for the process to exit; it returns how
// long the shutdown took.
func (r *replica) stop(t *testing.T) time.Duration {
	t.Helper()
	return r.signal(t, syscall.SIGTERM)
}

// kill sends SIGKILL and waits for the process to go.
func (r *replica) kill(t *testing.T) { r.signal(t, syscall.SIGKILL) }

func (r *replica) signal(t *testing.T, sig syscall.Signal) time.Duration {
	t.Helper()
	start := time.Now()
	if err := r.p.cmd.Process.Signal(sig); err != nil {
		t.Fatalf("%s: %v", r.name, err)
	}
	select {
	case <-r.p.done:
	case <-time.After(60 * time.Second):
		t.Fatalf("%s did not exit within 60s of %v", r.name, sig)
	}
	if sig == syscall.SIGTERM && !r.p.cmd.ProcessState.Success() {
		t.Errorf("%s exited with %v after SIGTERM (log: %s)", r.name, r.p.cmd.ProcessState, serverLog(r.name))
	}
	return time.Since(start)
}

// webhookURL is tenant's validate URL on this replica, bypassing HAProxy.
func (r *replica) webhookURL(tenant string) string {
	return "https://" + r.webhook + "/t/" + tenant + "/validate"
}

// metric is the sum of every series of the named metric on this replica
// (-1 when it cannot be read).
func (r *replica) metric(name string) float64 {
	return scrapeSum("http://"+r.metrics+"/metrics", name)
}

func scrapeSum(url, name string) float64 {
	resp, err := http.Get(url)
	if err != nil {
		return -1
	}
	defer resp.Body.Close()
	sum, found := 0.0, false
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		rest, ok := strings.CutPrefix(line, name)
		if !ok || (rest != "" && rest[0] != ' ' && rest[0] != '{') {
			continue
		}
		fields := strings.Fields(rest[strings.LastIndexByte(rest, '}')+1:])
		if len(fields) == 0 {
			continue
		}
		if v, err := strconv.ParseFloat(fields[0], 64); err == nil {
			sum, found = sum+v, true
		}
	}
	if !found {
		return -1
	}
	return sum
}

func httpStatus(url string) int {
	resp, err := http.Get(url)
	if err != nil {
		return 0
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}

// haproxy is Debian's haproxy in TCP mode in front of the replicas, as a
// Service or a cloud load balancer with TLS passthrough is: it health-checks
// each replica's /readyz on its metrics port.
type haproxy struct {
	addr  string // the frontend, host:port
	stats string // the stats page's CSV URL
	p     *proc
}

func startHAProxy(t *testing.T, f *fixture, rs ...*replica) *haproxy {
	t.Helper()
	bin, err := exec.LookPath("haproxy")
	if err != nil {
		t.Fatal("haproxy is not installed: run scripts/ensure-haproxy.sh")
	}
	h := &haproxy{addr: freeAddr(t)}
	statsAddr := freeAddr(t)
	h.stats = "http://" + statsAddr + "/stats;csv"
	var servers strings.Builder
	for _, r := range rs {
		_, mport := splitPort(t, r.metrics)
		fmt.Fprintf(&servers, "  server %s %s check port %s\n", r.haproxyName, r.webhook, mport)
	}
	cfg := fmt.Sprintf(`global
  maxconn 4096
defaults
  mode tcp
  timeout connect 2s
  timeout client 5m
  timeout server 5m
  # A connection refused by a replica that just died goes to another, at
  # once rather than on the last of the retries.
  retries 3
  option redispatch 1
frontend webhook
  bind %s
  default_backend gateways
backend gateways
  # Apiservers keep their HTTP/2 connections: balance them, not requests.
  balance leastconn
  option httpchk GET /readyz
  http-check expect status 200
  default-server inter %dms fall 2 rise %d
%sfrontend stats
  mode http
  bind %s
  stats enable
  stats uri /stats
`, h.addr, haproxyInter.Milliseconds(), haproxyRise, servers.String(), statsAddr)
	path := filepath.Join(f.dir, "haproxy.cfg")
	if err := os.WriteFile(path, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	h.p = pinned(t, "haproxy", -1, nil, bin, "-db", "-f", path)
	for _, r := range rs {
		h.waitUp(t, r)
	}
	return h
}

func splitPort(t *testing.T, addr string) (string, string) {
	i := strings.LastIndexByte(addr, ':')
	if i < 0 {
		t.Fatalf("no port in %q", addr)
	}
	return addr[:i], addr[i+1:]
}

// status is the health status HAProxy gives replica r ("UP", "DOWN", ...).
func (h *haproxy) status(r *replica) string {
	resp, err := http.Get(h.stats)
	if err != nil {
		return err.Error()
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	col := -1
	for sc.Scan() {
		fields := strings.Split(sc.Text(), ",")
		if strings.HasPrefix(sc.Text(), "# ") {
			for i, f := range fields {
				if f == "status" {
					col = i
				}
			}
			continue
		}
		if len(fields) > 1 && fields[0] == "gateways" && fields[1] == r.haproxyName && col >= 0 && col < len(fields) {
			return fields[col]
		}
	}
	return "unknown"
}

// waitUp waits until HAProxy sends r new connections again.
func (h *haproxy) waitUp(t *testing.T, r *replica) time.Duration {
	t.Helper()
	start := time.Now()
	testutil.Eventually(t, drillReady, "haproxy marks "+r.name+" up", func() bool { return h.status(r) == "UP" })
	return time.Since(start)
}

// storedDecisions counts the decisions stored for uids starting with
// prefix: uid -> rows.
func storedDecisions(t *testing.T, f *fixture, prefix string) map[string]int {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	rows, err := f.pool.Query(ctx, `SELECT uid, count(*) FROM decisions WHERE uid LIKE $1 GROUP BY uid`, prefix+"%")
	if err != nil {
		t.Fatalf("count decisions: %v", err)
	}
	defer rows.Close()
	out := map[string]int{}
	for rows.Next() {
		var uid string
		var n int
		if err := rows.Scan(&uid, &n); err != nil {
			t.Fatal(err)
		}
		out[uid] = n
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// settle waits until every replica has written what it queued and
// replayed what it spilled, and the stored count stops moving; it returns
// the stored decisions of prefix.
func settle(t *testing.T, f *fixture, prefix string, rs ...*replica) map[string]int {
	t.Helper()
	deadline := time.Now().Add(drillSettle)
	last := -1
	for {
		idle := true
		for _, r := range rs {
			if r.metric("portcullis_decisions_queue_depth") != 0 || r.metric("portcullis_decisions_spill_bytes") != 0 {
				idle = false
			}
		}
		stored := storedDecisions(t, f, prefix)
		if idle && len(stored) == last {
			return stored
		}
		last = len(stored)
		if time.Now().After(deadline) {
			t.Errorf("decisions of %s did not settle within %v", prefix, drillSettle)
			return stored
		}
		time.Sleep(time.Second)
	}
}
