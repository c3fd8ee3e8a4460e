package cli

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/portcullis-dev/portcullis/internal/apiv1"
)

// A secret written over an existing, world-readable file: a reader that
// opened the old file before (as an attacker on the machine may) must not
// read the secret through it, and the new file must be private from the
// start. Writing in place and then chmodding leaked it to both.
func TestSecretsReplaceFilesNeverWriteIntoThem(t *testing.T) {
	cases := []struct {
		name  string
		file  string
		write func(dir string) error
	}{
		{"admin login config", "config.yaml", func(dir string) error {
			return writeConfig(filepath.Join(dir, "config.yaml"), Config{Server: "https://gw", Token: "SECRET-TOKEN"})
		}},
		{"cluster create --out kubeconfig", artifactFiles[0], func(dir string) error {
			_, err := writeArtifacts(dir, apiv1.Artifacts{Kubeconfig: "token: SECRET-TOKEN\n", Webhooks: "w\n"})
			return err
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			p := filepath.Join(dir, tc.file)
			if err := os.WriteFile(p, []byte("old, public\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			reader, err := os.Open(p)
			if err != nil {
				t.Fatal(err)
			}
			defer reader.Close()
			if err := tc.write(dir); err != nil {
				t.Fatal(err)
			}
			seen, err := io.ReadAll(reader)
			if err != nil || string(seen) != "old, public\n" {
				t.Fatalf("a reader of the old file read %q, %v", seen, err)
			}
			st, err := os.Stat(p)
			if err != nil || st.Mode().Perm() != 0o600 {
				t.Fatalf("mode %v, %v", st.Mode(), err)
			}
			b, err := os.ReadFile(p)
			if err != nil || len(b) == 0 {
				t.Fatalf("new content %q, %v", b, err)
			}
			// No temporary file is left behind.
			if es, _ := os.ReadDir(dir); len(es) > len(artifactFiles) {
				t.Fatalf("files left: %v", es)
			}
		})
	}
}

// admin login takes the token from standard input or a file, so that it
// is not on the command line (ps, shell history).
func TestLoginTokenSources(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "token")
	if err := os.WriteFile(file, []byte("  adm_file\nsecond line\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	empty := filepath.Join(dir, "empty")
	if err := os.WriteFile(empty, []byte("\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name, flag, stdin, file string
		fromStdin               bool
		want, err               string
	}{
		{name: "flag", flag: "adm_flag", want: "adm_flag"},
		{name: "stdin", fromStdin: true, stdin: "adm_stdin\n", want: "adm_stdin"},
		{name: "stdin without newline", fromStdin: true, stdin: "adm_stdin", want: "adm_stdin"},
		{name: "file", file: file, want: "adm_file"},
		{name: "empty stdin", fromStdin: true, err: "no token in standard input"},
		{name: "empty file", file: empty, err: "no token in " + empty},
		{name: "missing file", file: filepath.Join(dir, "nope"), err: "--token-file: open"},
		{name: "two sources", flag: "x", fromStdin: true, err: "give the token one way"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := &env{stdin: strings.NewReader(tc.stdin)}
			c := &connFlags{token: tc.flag}
			err := e.loginToken(c, tc.fromStdin, tc.file)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err = %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil || c.token != tc.want {
				t.Fatalf("token %q, %v; want %q", c.token, err, tc.want)
			}
		})
	}
}
