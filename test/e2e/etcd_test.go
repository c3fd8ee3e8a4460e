package e2e

import (
	"net"
	"net/url"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"go.etcd.io/etcd/server/v3/embed"
)

// freePort returns a loopback port that was free a moment ago. The
// apiserver and etcd want a port on their command line; the window in which
// another process could take it is short.
func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

func loopbackURL(scheme string, port int) url.URL {
	return url.URL{Scheme: scheme, Host: net.JoinHostPort("127.0.0.1", strconv.Itoa(port))}
}

// startEtcd runs an embedded single-member etcd on loopback and returns its
// client URL. Every apiserver of the test uses it with its own key prefix.
func startEtcd(t *testing.T) string {
	t.Helper()
	cfg := embed.NewConfig()
	cfg.Name = "e2e"
	cfg.Dir = t.TempDir()
	// Closing logs errors about closed listeners: the log goes to a file
	// that nobody reads unless etcd fails to start.
	cfg.LogLevel = "error"
	cfg.LogOutputs = []string{filepath.Join(cfg.Dir, "etcd.log")}
	cfg.UnsafeNoFsync = true // throwaway data
	client, peer := loopbackURL("http", freePort(t)), loopbackURL("http", freePort(t))
	cfg.ListenClientUrls, cfg.AdvertiseClientUrls = []url.URL{client}, []url.URL{client}
	cfg.ListenPeerUrls, cfg.AdvertisePeerUrls = []url.URL{peer}, []url.URL{peer}
	cfg.InitialCluster = cfg.InitialClusterFromName(cfg.Name)
	e, err := embed.StartEtcd(cfg)
	if err != nil {
		t.Fatalf("etcd: %v\n%s", err, tail(filepath.Join(cfg.Dir, "etcd.log"), 20))
	}
	t.Cleanup(e.Close)
	select {
	case <-e.Server.ReadyNotify():
	case err := <-e.Err():
		t.Fatalf("etcd: %v", err)
	case <-time.After(time.Minute):
		t.Fatal("etcd did not become ready in a minute")
	}
	return client.String()
}
