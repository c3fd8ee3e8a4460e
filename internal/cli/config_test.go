package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestConnectionSettingsPrecedence(t *testing.T) {
	dir := t.TempDir()
	cfgPath := filepath.Join(dir, "portcullis", "config.yaml")
	if err := writeConfig(cfgPath, Config{Server: "https://saved:9443", Token: "saved-token", CAFile: "/saved/ca.crt"}); err != nil {
		t.Fatal(err)
	}
	if st, err := os.Stat(cfgPath); err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("config file mode: %v %v", st.Mode(), err)
	}
	tests := []struct {
		name  string
		flags connFlags
		env   map[string]string
		want  Config
	}{
		{"file", connFlags{}, nil, Config{"https://saved:9443", "saved-token", "/saved/ca.crt"}},
		{"env over file", connFlags{}, map[string]string{"PORTCULLIS_TOKEN": "env-token"},
			Config{"https://saved:9443", "env-token", "/saved/ca.crt"}},
		{"flag over env", connFlags{token: "flag-token"}, map[string]string{"PORTCULLIS_TOKEN": "env-token"},
			Config{"https://saved:9443", "flag-token", "/saved/ca.crt"}},
		{"same server, trailing slash", connFlags{server: "https://saved:9443/"}, nil,
			Config{"https://saved:9443/", "saved-token", "/saved/ca.crt"}},
		// The saved token is never sent to another server.
		{"other server", connFlags{server: "https://other:9443", token: "t"}, nil, Config{"https://other:9443", "t", ""}},
		{"all from env", connFlags{}, map[string]string{"PORTCULLIS_SERVER": "https://e", "PORTCULLIS_TOKEN": "e", "PORTCULLIS_CA_FILE": "/e"},
			Config{"https://e", "e", "/e"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			envs := map[string]string{"XDG_CONFIG_HOME": dir}
			for k, v := range tt.env {
				envs[k] = v
			}
			e := &env{getenv: func(k string) string { return envs[k] }}
			got, err := e.resolve(&tt.flags)
			if err != nil || got != tt.want {
				t.Fatalf("resolve = %+v, %v; want %+v", got, err, tt.want)
			}
		})
	}

	// Another server without a token is an error, not the saved token.
	e := &env{getenv: func(k string) string { return map[string]string{"XDG_CONFIG_HOME": dir}[k] }}
	if _, err := e.resolve(&connFlags{server: "https://other:9443"}); err == nil || !strings.Contains(err.Error(), "no token for https://other:9443") {
		t.Fatalf("other server without a token: %v", err)
	}
	// PORTCULLIS_CONFIG and --config choose the file.
	e = &env{getenv: func(k string) string { return map[string]string{"PORTCULLIS_CONFIG": cfgPath}[k] }}
	if got, err := e.resolve(&connFlags{}); err != nil || got.Token != "saved-token" {
		t.Fatalf("PORTCULLIS_CONFIG: %+v %v", got, err)
	}
	if got, err := (&env{getenv: func(string) string { return "" }}).resolve(&connFlags{config: cfgPath}); err != nil || got.Token != "saved-token" {
		t.Fatalf("--config: %+v %v", got, err)
	}
	// A broken file says which file.
	bad := filepath.Join(dir, "bad.yaml")
	os.WriteFile(bad, []byte("server: [\n"), 0o600)
	if _, err := (&env{getenv: func(string) string { return "" }}).resolve(&connFlags{config: bad}); err == nil || !strings.Contains(err.Error(), bad) {
		t.Fatalf("broken config file: %v", err)
	}
}
