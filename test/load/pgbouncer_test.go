package load

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// pgbouncer is Debian's PgBouncer in transaction mode between the
// replicas' pools and PostgreSQL, as a fleet of dozens of replicas runs it
// (docs/production.md, "PgBouncer"). The replicas' LISTEN connections and
// the test's own pool go to PostgreSQL directly.
type pgbouncer struct {
	addr string // 127.0.0.1:port
	url  string // the replicas' --database-url
	p    *proc
}

// PgBouncer settings of the drills; docs/production.md gives the reasons.
const (
	// The most server connections per database and user: PostgreSQL's
	// side of every replica's pool together.
	bouncerPoolSize = 20
	// After a failed connection to PostgreSQL, PgBouncer waits this long
	// (seconds) before the next one and meanwhile fails every query at
	// once. Its default, 15s, keeps the pool away for that long after
	// PostgreSQL returns from an outage, where drill 4 gives a policy
	// change 1s from the return.
	bouncerLoginRetry = "0.25"
)

// startPgBouncer runs pgbouncer for the database server whose Unix socket
// directory is sockDir, with a configuration of its own in a temporary
// directory, as the postgres user when this process is root (PgBouncer refuses root).
func startPgBouncer(t *testing.T, sockDir string) *pgbouncer {
	t.Helper()
	bin, err := exec.LookPath("pgbouncer")
	if err != nil {
		t.Fatal("pgbouncer is not installed: run scripts/ensure-pgbouncer.sh")
	}
	// A directory of its own that the postgres user can read.
	dir, err := os.MkdirTemp("", "portcullis-pgbouncer-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	b := &pgbouncer{addr: freeAddr(t)}
	host, port := splitPort(t, b.addr)
	// Trust, as the database server's own: both listen only where this
	// test reaches. PgBouncer still wants the user in its auth_file.
	if err := os.WriteFile(filepath.Join(dir, "userlist.txt"), []byte(`"postgres" ""`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg := fmt.Sprintf(`[databases]
* = host=%s port=5432 user=postgres

[pgbouncer]
listen_addr = %s
listen_port = %s
unix_socket_dir =
auth_type = trust
auth_file = %s
pool_mode = transaction
default_pool_size = %d
max_client_conn = 500
server_login_retry = %s
admin_users = postgres
`, sockDir, host, port, filepath.Join(dir, "userlist.txt"), bouncerPoolSize, bouncerLoginRetry)
	path := filepath.Join(dir, "pgbouncer.ini")
	if err := os.WriteFile(path, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	b.p = pinnedAs(t, "pgbouncer", -1, postgresCred(t), nil, bin, path)
	q := url.Values{"sslmode": {"disable"}}
	b.url = (&url.URL{Scheme: "postgres", User: url.User("postgres"), Host: b.addr, Path: "/postgres", RawQuery: q.Encode()}).String()
	deadline := time.Now().Add(10 * time.Second)
	for {
		conn, err := pgx.Connect(context.Background(), b.adminURL())
		if err == nil {
			conn.Close(context.Background())
			return b
		}
		select {
		case <-b.p.done:
			t.Fatalf("pgbouncer exited (log: %s)", serverLog("pgbouncer"))
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("pgbouncer not accepting connections after 10s: %v (log: %s)", err, serverLog("pgbouncer"))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// adminURL is PgBouncer's admin console (SHOW ...), which speaks the
// simple protocol only.
func (b *pgbouncer) adminURL() string {
	q := url.Values{"sslmode": {"disable"}, "default_query_exec_mode": {"simple_protocol"}}
	return (&url.URL{Scheme: "postgres", User: url.User("postgres"), Host: b.addr, Path: "/pgbouncer", RawQuery: q.Encode()}).String()
}

// transactions is how many transactions PgBouncer has passed to the
// database postgres so far (SHOW STATS), -1 when it cannot tell.
func (b *pgbouncer) transactions() int64 {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, b.adminURL())
	if err != nil {
		return -1
	}
	defer conn.Close(context.Background())
	rows, err := conn.Query(ctx, "SHOW STATS")
	if err != nil {
		return -1
	}
	defer rows.Close()
	for rows.Next() {
		// The admin console answers in text.
		var db string
		var xact int64 = -1
		for i, c := range rows.FieldDescriptions() {
			switch v := string(rows.RawValues()[i]); c.Name {
			case "database":
				db = v
			case "total_xact_count":
				if n, err := strconv.ParseInt(v, 10, 64); err == nil {
					xact = n
				}
			}
		}
		if db == "postgres" {
			return xact
		}
	}
	return -1
}

// postgresCred is the postgres user's when this process is root, else nil.
func postgresCred(t *testing.T) *syscall.Credential {
	t.Helper()
	if os.Geteuid() != 0 {
		return nil
	}
	u, err := user.Lookup("postgres")
	if err != nil {
		t.Fatalf("running as root, pgbouncer must run as the postgres user: %v", err)
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
}
