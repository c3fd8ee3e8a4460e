package cli

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/portcullis-dev/portcullis/internal/adminauth"
	"github.com/portcullis-dev/portcullis/internal/pgtest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

func runAdmin(env map[string]string, args ...string) (int, string, string) {
	var out, errOut bytes.Buffer
	code := Run(context.Background(), args, Process{Stdout: &out, Stderr: &errOut,
		Getenv: func(k string) string { return env[k] }, Bootstrap: adminauth.Bootstrap})
	return code, out.String(), errOut.String()
}

func TestMigrateAndBootstrap(t *testing.T) {
	url := pgtest.EmptyURL(t)

	code, out, stderr := runAdmin(nil, "bootstrap", "--database-url", url)
	if code != 1 || !strings.Contains(stderr, "admin migrate --database-url") {
		t.Fatalf("bootstrap before migrate: %d %q %q", code, out, stderr)
	}
	code, out, stderr = runAdmin(nil, "migrate", "--database-url", url)
	if code != 0 || !strings.Contains(out, "applied migration 00001") {
		t.Fatalf("migrate: %d %q %q", code, out, stderr)
	}
	code, out, _ = runAdmin(map[string]string{"PORTCULLIS_DATABASE_URL": url}, "migrate")
	if code != 0 || out != "database schema is up to date\n" {
		t.Fatalf("second migrate (URL from env): %d %q", code, out)
	}

	code, out, stderr = runAdmin(nil, "bootstrap", "--database-url", url)
	if code != 0 {
		t.Fatalf("bootstrap: %d %q", code, stderr)
	}
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if len(lines) != 1 || !strings.HasPrefix(lines[0], adminauth.Prefix) {
		t.Fatalf("bootstrap printed %q, want one token line", out)
	}
	code, out, stderr = runAdmin(nil, "bootstrap", "--database-url", url)
	if code != 1 || out != "" || !strings.Contains(stderr, "already exists") {
		t.Fatalf("second bootstrap: %d %q %q", code, out, stderr)
	}
}

// Behind PgBouncer in transaction mode the gateway's pod holds both URLs
// in its environment; the database commands take the direct one.
func TestDatabaseCommandsPreferTheDirectURL(t *testing.T) {
	url := pgtest.EmptyURL(t)
	const pooled = "postgres://postgres@127.0.0.1:1/x?connect_timeout=1" // nothing listens
	env := map[string]string{"PORTCULLIS_DATABASE_URL": pooled, "PORTCULLIS_DATABASE_DIRECT_URL": url}
	code, out, stderr := runAdmin(env, "migrate")
	if code != 0 || !strings.Contains(out, "applied migration 00001") {
		t.Fatalf("migrate: %d %q %q", code, out, stderr)
	}
	code, out, stderr = runAdmin(env, "bootstrap")
	if code != 0 || !strings.HasPrefix(out, adminauth.Prefix) {
		t.Fatalf("bootstrap: %d %q %q", code, out, stderr)
	}
	code, _, stderr = runAdmin(nil, "migrate", "--database-url", url, "--database-direct-url", pooled)
	if code != 1 || !strings.Contains(stderr, "connect to database") {
		t.Fatalf("migrate with an unreachable direct URL: %d %q, want it used (and failing)", code, stderr)
	}
}

func TestUsageErrors(t *testing.T) {
	tests := []struct {
		name     string
		args     []string
		wantCode int
		wantErr  string
	}{
		{"no command", nil, 2, ""},
		{"unknown command", []string{"migrat"}, 2, `unknown command "migrat"`},
		{"missing URL", []string{"migrate"}, 2, "--database-url (PORTCULLIS_DATABASE_URL) is required"},
		{"not a URL", []string{"migrate", "--database-url", "dbname=x"}, 2, "postgres:// URL"},
		{"direct not a URL", []string{"migrate", "--database-url", "postgres://x", "--database-direct-url", "dbname=x"}, 2, "--database-direct-url must be a postgres:// URL"},
		{"unknown flag", []string{"bootstrap", "--databse-url", "x"}, 2, "flag provided but not defined: -databse-url"},
		{"stray argument", []string{"migrate", "--database-url", "postgres://x", "now"}, 2, `unexpected argument "now"`},
		{"unreachable database", []string{"migrate", "--database-url", "postgres://postgres@127.0.0.1:1/x?connect_timeout=1"}, 1, "connect to database"},
		{"help", []string{"migrate", "-h"}, 0, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, _, stderr := runAdmin(nil, tt.args...)
			if code != tt.wantCode || !strings.Contains(stderr, tt.wantErr) {
				t.Fatalf("code %d stderr %q, want %d and %q", code, stderr, tt.wantCode, tt.wantErr)
			}
		})
	}
}
