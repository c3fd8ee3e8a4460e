// Package envflag lets every command-line flag also come from the
// environment: --webhook-addr from PORTCULLIS_WEBHOOK_ADDR, and its value
// from a file named by PORTCULLIS_WEBHOOK_ADDR_FILE (for secrets mounted as
// files). A flag given on the command line wins over the environment.
package envflag

import (
	"flag"
	"fmt"
	"os"
	"strings"
)

// EnvName is the environment variable for flag name.
func EnvName(prefix, name string) string {
	return prefix + strings.ToUpper(strings.ReplaceAll(name, "-", "_"))
}

// Parse parses args into fs, then fills every flag not set on the command
// line from the environment (looked up with getenv).
func Parse(fs *flag.FlagSet, prefix string, args []string, getenv func(string) string) error {
	if err := fs.Parse(args); err != nil {
		return err
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	var err error
	fs.VisitAll(func(f *flag.Flag) {
		if err != nil || set[f.Name] {
			return
		}
		env := EnvName(prefix, f.Name)
		val, fileName := getenv(env), getenv(env+"_FILE")
		switch {
		case val != "" && fileName != "":
			err = fmt.Errorf("both %s and %s_FILE are set; use one", env, env)
			return
		case fileName != "":
			b, rerr := os.ReadFile(fileName)
			if rerr != nil {
				err = fmt.Errorf("%s_FILE: %w", env, rerr)
				return
			}
			val = strings.TrimRight(string(b), "\r\n")
		case val == "":
			return
		}
		if serr := fs.Set(f.Name, val); serr != nil {
			err = fmt.Errorf("%s: invalid value %q: %w", env, val, serr)
		}
	})
	return err
}
