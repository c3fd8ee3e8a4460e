package pglocal

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// niceness reads the nice value of a process from /proc (field 19); false
// when the process is gone.
func niceness(t *testing.T, pid int) (int, bool) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if os.IsNotExist(err) || errors.Is(err, syscall.ESRCH) {
		return 0, false
	}
	if err != nil {
		t.Fatal(err)
	}
	// The command name, in parentheses, may hold spaces: count after it.
	f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+2:]))
	n, err := strconv.Atoi(f[16])
	if err != nil {
		t.Fatal(err)
	}
	return n, true
}

// children lists the processes whose parent is pid.
func children(t *testing.T, pid int) []int {
	t.Helper()
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	var out []int
	for _, e := range entries {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue // exited meanwhile
		}
		f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+2:]))
		if ppid, _ := strconv.Atoi(f[1]); ppid == pid {
			out = append(out, p)
		}
	}
	return out
}

func TestStartChildNice(t *testing.T) {
	bin, err := FindBinDir()
	if err != nil {
		// The other database tests may use a server given by URL instead
		// (pgtest's PORTCULLIS_TEST_DATABASE_URL); this one needs binaries.
		if os.Getenv("PORTCULLIS_TEST_DATABASE_URL") != "" {
			t.Skip("no PostgreSQL server binaries, and the tests' server is given by PORTCULLIS_TEST_DATABASE_URL: ", err)
		}
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	// Not t.TempDir: its parent is private, and the server runs as the
	// postgres user when this test runs as root.
	dir, err := os.MkdirTemp("", "pglocal-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	c, err := New(bin, filepath.Join(dir, "data"), filepath.Join(dir, "sock"))
	if err != nil {
		t.Fatal(err)
	}
	c.Fast, c.Nice = true, 19
	if err := c.Init(ctx); err != nil {
		t.Fatal(err)
	}
	if err := c.StartChild(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Stop(context.Background()) })
	pid := c.child.Process.Pid
	if got, ok := niceness(t, pid); !ok || got != 19 {
		t.Errorf("postmaster niceness %d (running: %t), want 19", got, ok)
	}
	// Its background processes (checkpointer, walwriter, ...) exist once it
	// accepts connections, and inherit the niceness.
	kids := children(t, pid)
	if len(kids) == 0 {
		t.Fatal("the postmaster has no child processes")
	}
	// A short-lived backend (the readiness probe's) may exit meanwhile.
	for _, k := range kids {
		if got, ok := niceness(t, k); ok && got != 19 {
			t.Errorf("child %d niceness %d, want 19", k, got)
		}
	}
}
