package cli

import (
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"time"

	"github.com/portcullis-dev/portcullis/internal/apiv1"
)

func cmdLogin(e *env, args []string) error {
	f := e.newFlags("login")
	c := f.conn(false)
	if _, err := f.parse(args, 0, 0, ""); err != nil {
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
		_, err := fmt.Fprintf(w, "%s at %s\n", describeWho(who), cl.base)
		return err
	})
}
