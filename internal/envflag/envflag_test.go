package envflag_test

import (
	"flag"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/portcullis-dev/portcullis/internal/envflag"
)

func TestParse(t *testing.T) {
	secret := filepath.Join(t.TempDir(), "url")
	if err := os.WriteFile(secret, []byte("postgres://from-file\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		args    []string
		env     map[string]string
		wantURL string
		wantDur time.Duration
		wantErr string
	}{
		{name: "defaults", wantURL: "", wantDur: time.Second},
		{name: "env", env: map[string]string{"P_DATABASE_URL": "postgres://env", "P_SHUTDOWN_TIMEOUT": "3s"}, wantURL: "postgres://env", wantDur: 3 * time.Second},
		{name: "flag wins over env", args: []string{"--database-url", "postgres://flag"}, env: map[string]string{"P_DATABASE_URL": "postgres://env"}, wantURL: "postgres://flag", wantDur: time.Second},
		{name: "file, trailing newline trimmed", env: map[string]string{"P_DATABASE_URL_FILE": secret}, wantURL: "postgres://from-file", wantDur: time.Second},
		{name: "both env and file", env: map[string]string{"P_DATABASE_URL": "x", "P_DATABASE_URL_FILE": secret}, wantErr: "both P_DATABASE_URL and P_DATABASE_URL_FILE"},
		{name: "missing file", env: map[string]string{"P_DATABASE_URL_FILE": "/nonexistent/x"}, wantErr: "P_DATABASE_URL_FILE"},
		{name: "bad env value", env: map[string]string{"P_SHUTDOWN_TIMEOUT": "soon"}, wantErr: `P_SHUTDOWN_TIMEOUT: invalid value "soon"`},
		{name: "bad flag value", args: []string{"--shutdown-timeout", "soon"}, wantErr: "invalid value"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fs := flag.NewFlagSet("x", flag.ContinueOnError)
			fs.SetOutput(io.Discard)
			url := fs.String("database-url", "", "")
			dur := fs.Duration("shutdown-timeout", time.Second, "")
			err := envflag.Parse(fs, "P_", tt.args, func(k string) string { return tt.env[k] })
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want it to contain %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if *url != tt.wantURL || *dur != tt.wantDur {
				t.Fatalf("got %q %v, want %q %v", *url, *dur, tt.wantURL, tt.wantDur)
			}
		})
	}
}
