package cli

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"sigs.k8s.io/yaml"
)

// Config is the file `admin login` writes.
type Config struct {
	Server string `json:"server"`
	Token  string `json:"token"`
	CAFile string `json:"caFile,omitempty"`
}

// configPath is where `admin login` keeps the connection:
// PORTCULLIS_CONFIG, else $XDG_CONFIG_HOME/portcullis/config.yaml, else
// ~/.config/portcullis/config.yaml.
func (e *env) configPath(flagValue string) (string, error) {
	if flagValue != "" {
		return flagValue, nil
	}
	if p := e.getenv("PORTCULLIS_CONFIG"); p != "" {
		return p, nil
	}
	if d := e.getenv("XDG_CONFIG_HOME"); d != "" {
		return filepath.Join(d, "portcullis", "config.yaml"), nil
	}
	home := e.getenv("HOME")
	if home == "" {
		return "", errors.New("cannot place the config file: neither XDG_CONFIG_HOME nor HOME is set (or set PORTCULLIS_CONFIG)")
	}
	return filepath.Join(home, ".config", "portcullis", "config.yaml"), nil
}

func readConfig(path string) (Config, bool, error) {
	var cfg Config
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return cfg, false, nil
	}
	if err != nil {
		return cfg, false, err
	}
	if err := yaml.UnmarshalStrict(b, &cfg); err != nil {
		return cfg, false, fmt.Errorf("config file %s: %w", path, err)
	}
	return cfg, true, nil
}

func writeConfig(path string, cfg Config) error {
	b, err := yaml.Marshal(cfg)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	// The file holds a token: a new private file replaces the old one.
	return replaceFile(path, b, 0o600)
}

// connFlags are the flags of every command that calls the API.
type connFlags struct {
	server, token, caFile, config string
	output                        string
}

func (f *flags) conn(withOutput bool) *connFlags {
	c := &connFlags{}
	f.StringVar(&c.server, "server", "", "admin API URL, https://host:port (or PORTCULLIS_SERVER, or the config file of admin login)")
	f.StringVar(&c.token, "token", "", "admin API token (or PORTCULLIS_TOKEN, or the config file of admin login)")
	f.StringVar(&c.caFile, "ca-file", "", "CA certificate that signed the server's certificate (or PORTCULLIS_CA_FILE, or the config file of admin login)")
	f.StringVar(&c.config, "config", "", "config file (or PORTCULLIS_CONFIG; default $XDG_CONFIG_HOME/portcullis/config.yaml)")
	if withOutput {
		f.StringVar(&c.output, "o", "", "output format: json or yaml (default: a table)")
	}
	return c
}

func (c *connFlags) checkOutput() error {
	switch c.output {
	case "", "json", "yaml":
		return nil
	}
	return usageErr("-o %q: use json or yaml (or nothing for a table)", c.output)
}

// flagsOrEnv is each setting from its flag, else from the environment.
func (e *env) flagsOrEnv(c *connFlags) Config {
	cfg := Config{Server: c.server, Token: c.token, CAFile: c.caFile}
	if cfg.Server == "" {
		cfg.Server = e.getenv("PORTCULLIS_SERVER")
	}
	if cfg.Token == "" {
		cfg.Token = e.getenv("PORTCULLIS_TOKEN")
	}
	if cfg.CAFile == "" {
		cfg.CAFile = e.getenv("PORTCULLIS_CA_FILE")
	}
	return cfg
}

// resolve picks each setting from the flag, else the environment, else the
// config file. The file's token and CA are used only for the file's
// server, so that a token is never sent to a server it was not saved for.
func (e *env) resolve(c *connFlags) (Config, error) {
	cfg := e.flagsOrEnv(c)
	if cfg.Server == "" || cfg.Token == "" {
		path, err := e.configPath(c.config)
		if err != nil && cfg.Server == "" {
			return cfg, exitError{exitUsage, err}
		}
		if err == nil {
			saved, ok, err := readConfig(path)
			if err != nil {
				return cfg, err
			}
			if ok && (cfg.Server == "" || strings.TrimRight(cfg.Server, "/") == strings.TrimRight(saved.Server, "/")) {
				if cfg.Server == "" {
					cfg.Server = saved.Server
				}
				if cfg.Token == "" {
					cfg.Token = saved.Token
				}
				if cfg.CAFile == "" {
					cfg.CAFile = saved.CAFile
				}
			}
		}
	}
	const how = "run `admin login --server URL --token T [--ca-file F]` once, or pass --server and --token (or set PORTCULLIS_SERVER and PORTCULLIS_TOKEN)"
	switch {
	case cfg.Server == "":
		return cfg, usageErr("no server to talk to: %s", how)
	case cfg.Token == "":
		return cfg, usageErr("no token for %s: %s", cfg.Server, how)
	}
	return cfg, nil
}
