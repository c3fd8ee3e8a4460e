package cli

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/portcullis-dev/portcullis/internal/apiv1"
)

func cmdLogin(e *env, args []string) error {
	f := e.newFlags("login")
	c := f.conn(false)
	fromStdin := f.Bool("token-stdin", false, "read the token from standard input (one line), not the command line")
	fromFile := f.String("token-file", "", "read the token from this file (its first line), not the command line")
	if _, err := f.parse(args, 0, 0, ""); err != nil {
		return err
	}
	if err := e.loginToken(c, *fromStdin, *fromFile); err != nil {
		return err
	}
	cfg := e.flagsOrEnv(c)
	if err := required("server", cfg.Server, "token", cfg.Token); err != nil {
		return err
	}
	cfg.Server = strings.TrimRight(cfg.Server, "/")
	if cfg.CAFile != "" {
		// The config file is read from anywhere later.
		abs, err := filepath.Abs(cfg.CAFile)
		if err != nil {
			return err
		}
		cfg.CAFile = abs
	}
	cl, err := newClient(cfg)
	if err != nil {
		return err
	}
	var who apiv1.WhoAmI
	if _, err := cl.getJSON(e, apiPath("whoami"), nil, &who); err != nil {
		return fmt.Errorf("checking the token: %w", err)
	}
	path, err := e.configPath(c.config)
	if err != nil {
		return err
	}
	if err := writeConfig(path, cfg); err != nil {
		return err
	}
	e.printf("Logged in to %s as %s. Saved in %s.\n", cfg.Server, describeWho(who), path)
	return nil
}

// loginToken sets c.token from standard input or a file when asked: a
// token on the command line is visible to every user of the machine (ps,
// /proc) and lands in the shell's history.
func (e *env) loginToken(c *connFlags, fromStdin bool, file string) error {
	sources := 0
	for _, set := range []bool{c.token != "", fromStdin, file != ""} {
		if set {
			sources++
		}
	}
	if sources > 1 {
		return usageErr("give the token one way: --token, --token-stdin or --token-file")
	}
	var (
		r    io.Reader
		from string
	)
	switch {
	case fromStdin:
		r, from = e.stdin, "standard input"
	case file != "":
		fh, err := os.Open(file)
		if err != nil {
			return usageErr("--token-file: %v", err)
		}
		defer fh.Close()
		r, from = fh, file
	default:
		return nil
	}
	// A token is one line; the limit stops a wrong file from being read
	// whole.
	line, err := bufio.NewReader(io.LimitReader(r, 64<<10)).ReadString('\n')
	if err != nil && err != io.EOF {
		return fmt.Errorf("reading the token from %s: %w", from, err)
	}
	c.token = strings.TrimSpace(line)
	if c.token == "" {
		return usageErr("no token in %s", from)
	}
	return nil
}

func describeWho(w apiv1.WhoAmI) string {
	s := fmt.Sprintf("%q (token %d), ", w.Name, w.TokenID)
	if w.Tenant != "" {
		s += fmt.Sprintf("%s of tenant %q", w.Role, w.Tenant)
	} else {
		s += w.Role
	}
	if w.ExpiresAt != nil {
		s += ", expires " + w.ExpiresAt.Format(time.RFC3339)
	}
	return s
}

func cmdWhoAmI(e *env, args []string) error {
	f := e.newFlags("whoami")
	c := f.conn(true)
	if _, err := f.parse(args, 0, 0, ""); err != nil {
		return err
	}
	cl, err := e.connect(c)
	if err != nil {
		return err
	}
	var who apiv1.WhoAmI
	raw, err := cl.getJSON(e, apiPath("whoami"), nil, &who)
	if err != nil {
		return err
	}
	return e.emit(c, raw, func(w io.Writer) error {
		_, err := fmt.Fprintf(w, "%s at %s\n", describeWho(who), cl.api.Base)
		return err
	})
}
