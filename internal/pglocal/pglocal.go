// Package pglocal runs a private PostgreSQL server from the machine's server
// binaries. `make run` keeps one under .portcullis/ and the tests start
// throwaway ones; both go through here so they find binaries and drop root
// privileges the same way.
package pglocal

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// ErrNoServer means no PostgreSQL server binaries were found.
var ErrNoServer = errors.New(`PostgreSQL server binaries (initdb, pg_ctl, postgres) not found.
Install them (Debian/Ubuntu: apt-get install postgresql) or set PORTCULLIS_DATABASE_URL to an existing database`)

// FindBinDir locates a directory holding initdb and postgres: pg_config
// --bindir first, then the newest /usr/lib/postgresql/*/bin.
func FindBinDir() (string, error) {
	var candidates []string
	if out, err := exec.Command("pg_config", "--bindir").Output(); err == nil {
		candidates = append(candidates, strings.TrimSpace(string(out)))
	}
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	sort.Slice(dirs, func(i, j int) bool { return pgMajor(dirs[i]) > pgMajor(dirs[j]) })
	candidates = append(candidates, dirs...)
	for _, d := range candidates {
		if isExecutable(filepath.Join(d, "initdb")) && isExecutable(filepath.Join(d, "postgres")) {
			return d, nil
		}
	}
	return "", ErrNoServer
}

func pgMajor(binDir string) int {
	n, _ := strconv.Atoi(filepath.Base(filepath.Dir(binDir)))
	return n
}

func isExecutable(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && !fi.IsDir() && fi.Mode()&0o111 != 0
}

// Cluster is one PostgreSQL data directory and the server running on it.
// The server listens on a Unix socket only.
type Cluster struct {
	BinDir    string
	DataDir   string
	SocketDir string
	Port      int
	// Fast turns off durability (fsync, full page writes); for tests only.
	Fast bool
	// Log receives the server's log; nil discards it.
	LogFile string
	// Nice, when above zero, runs StartChild's server and every process it
	// forks that much nicer than this process (as nice(1) -n; 19 is the
	// lowest priority): a benchmark's database that shares a core with the
	// measuring client must not preempt it.
	Nice int

	cred  *syscall.Credential
	child *exec.Cmd
	done  chan struct{}
}

// New prepares a cluster description. When the process runs as root the
// server runs as the postgres user, because PostgreSQL refuses root.
func New(binDir, dataDir, socketDir string) (*Cluster, error) {
	c := &Cluster{BinDir: binDir, DataDir: dataDir, SocketDir: socketDir, Port: 5432}
	if os.Geteuid() == 0 {
		u, err := user.Lookup("postgres")
		if err != nil {
			return nil, fmt.Errorf("running as root, PostgreSQL must run as the postgres user, which does not exist: %w", err)
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		c.cred = &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
	}
	return c, nil
}

// URL is a libpq/pgx connection URL for database db on this cluster.
func (c *Cluster) URL(db string) string {
	q := url.Values{}
	q.Set("host", c.SocketDir)
	q.Set("port", strconv.Itoa(c.Port))
	q.Set("sslmode", "disable")
	return (&url.URL{Scheme: "postgres", User: url.User("postgres"), Path: "/" + db, RawQuery: q.Encode()}).String()
}

// Initialized reports whether DataDir already holds a cluster.
func (c *Cluster) Initialized() bool {
	_, err := os.Stat(filepath.Join(c.DataDir, "PG_VERSION"))
	return err == nil
}

// Init runs initdb with trust authentication: the server only listens on a
// socket in a directory the caller controls.
func (c *Cluster) Init(ctx context.Context) error {
	for _, d := range []string{c.DataDir, c.SocketDir} {
		if err := c.mkdirOwned(d); err != nil {
			return err
		}
	}
	return c.run(ctx, "initdb", "-D", c.DataDir, "-U", "postgres", "--auth=trust", "--encoding=UTF8", "--locale=C", "--no-instructions")
}

// Start starts the server and waits until it accepts connections.
func (c *Cluster) Start(ctx context.Context) error {
	if err := c.mkdirOwned(c.SocketDir); err != nil {
		return err
	}
	opts := []string{
		"-c listen_addresses=''",
		"-k " + c.SocketDir,
		"-p " + strconv.Itoa(c.Port),
		"-c max_connections=200",
	}
	if c.Fast {
		opts = append(opts, "-c fsync=off", "-c synchronous_commit=off", "-c full_page_writes=off")
	}
	logFile := c.LogFile
	if logFile == "" {
		logFile = filepath.Join(c.DataDir, "server.log")
	}
	return c.run(ctx, "pg_ctl", "start", "-w", "-t", "60", "-D", c.DataDir, "-l", logFile, "-o", strings.Join(opts, " "))
}

// StartChild runs the postmaster as a child of this process that dies with
// it (a test binary killed by a timeout must not leave servers behind).
func (c *Cluster) StartChild(ctx context.Context) error {
	if err := c.mkdirOwned(c.SocketDir); err != nil {
		return err
	}
	args := []string{"-D", c.DataDir, "-k", c.SocketDir, "-p", strconv.Itoa(c.Port),
		"-c", "listen_addresses=", "-c", "max_connections=300"}
	if c.Fast {
		args = append(args, "-c", "fsync=off", "-c", "synchronous_commit=off", "-c", "full_page_writes=off")
	}
	cmd := exec.Command(filepath.Join(c.BinDir, "postgres"), args...)
	if c.Nice > 0 {
		// nice(1) execs the postmaster in place, so the pid, the death
		// signal and the inherited niceness all carry over.
		nice, err := exec.LookPath("nice")
		if err != nil {
			return fmt.Errorf("start postgres with niceness %d: %w", c.Nice, err)
		}
		cmd = exec.Command(nice, append([]string{"-n", strconv.Itoa(c.Nice), cmd.Path}, args...)...)
	}
	cmd.Dir = "/"
	logf, err := os.OpenFile(filepath.Join(filepath.Dir(c.DataDir), "server.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	cmd.Stdout, cmd.Stderr = logf, logf
	// SIGQUIT is PostgreSQL's immediate shutdown: the postmaster takes its
	// backends with it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: c.cred, Pdeathsig: syscall.SIGQUIT}
	if err := cmd.Start(); err != nil {
		logf.Close()
		return fmt.Errorf("start postgres: %w", err)
	}
	c.child, c.done = cmd, make(chan struct{})
	go func() { _ = cmd.Wait(); logf.Close(); close(c.done) }()
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case <-c.done:
			log, _ := os.ReadFile(logf.Name())
			return fmt.Errorf("postgres exited during start-up:\n%s", log)
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
		if c.run(ctx, "pg_isready", "-q", "-h", c.SocketDir, "-p", strconv.Itoa(c.Port)) == nil {
			return nil
		}
	}
	return errors.New("postgres did not accept connections within 60s")
}

// Stop stops the server (fast mode: sessions are disconnected).
func (c *Cluster) Stop(ctx context.Context) error {
	if c.child != nil {
		_ = c.child.Process.Signal(syscall.SIGINT)
		select {
		case <-c.done:
		case <-time.After(30 * time.Second):
			_ = c.child.Process.Kill()
			<-c.done
		}
		c.child = nil
		return nil
	}
	return c.run(ctx, "pg_ctl", "stop", "-w", "-t", "60", "-m", "fast", "-D", c.DataDir)
}

// Running reports whether a server is running on DataDir.
func (c *Cluster) Running(ctx context.Context) bool {
	return c.run(ctx, "pg_ctl", "status", "-D", c.DataDir) == nil
}

func (c *Cluster) mkdirOwned(dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	if c.cred != nil {
		if err := os.Chown(dir, int(c.cred.Uid), int(c.cred.Gid)); err != nil {
			return err
		}
		// The postgres user must be able to reach the directory.
		probe := exec.Command("test", "-w", dir)
		probe.SysProcAttr = &syscall.SysProcAttr{Credential: c.cred}
		if probe.Run() != nil {
			return fmt.Errorf("the postgres user cannot reach %s; make its parent directories traversable (chmod o+x) or set PORTCULLIS_DATABASE_URL", dir)
		}
	}
	return nil
}

func (c *Cluster) run(ctx context.Context, bin string, args ...string) error {
	cmd := exec.CommandContext(ctx, filepath.Join(c.BinDir, bin), args...)
	cmd.Dir = "/"
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if c.cred != nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: c.cred}
	}
	cmd.WaitDelay = 5 * time.Second
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("%s %s: %w\n%s", bin, strings.Join(args, " "), err, strings.TrimSpace(out.String()))
	}
	return nil
}
