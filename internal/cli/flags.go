package cli

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/portcullis-dev/portcullis/internal/apiv1"
)

// flags is a command's flag set. Its errors come back as usage errors and
// its -h prints to stdout.
type flags struct {
	*flag.FlagSet
	cmd command
}

func (e *env) newFlags(name string) *flags {
	var cmd command
	for _, c := range commands() {
		if c.name == name {
			cmd = c
		}
	}
	fs := flag.NewFlagSet("admin "+name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {
		fmt.Fprintf(e.stdout, "Usage: admin %s %s\n\n%s.\n\nFlags:\n", cmd.name, cmd.args, capitalize(cmd.summary))
		fs.SetOutput(e.stdout)
		fs.PrintDefaults()
		fs.SetOutput(io.Discard)
	}
	return &flags{FlagSet: fs, cmd: cmd}
}

func capitalize(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

// parse parses args, with flags allowed anywhere among the positional
// arguments (as kubectl allows), and checks the number of positional
// arguments: at least min, at most max (max < 0: any).
func (f *flags) parse(args []string, min, max int, names string) ([]string, error) {
	var pos []string
	for {
		if err := f.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return nil, err // Parse printed the usage
			}
			return nil, exitError{exitUsage, err}
		}
		rest := f.Args()
		if len(rest) == 0 {
			break
		}
		// flag.Parse drops a "--" terminator: everything after it is
		// positional.
		if n := len(args) - len(rest); n > 0 && args[n-1] == "--" {
			pos = append(pos, rest...)
			break
		}
		pos = append(pos, rest[0])
		args = rest[1:]
	}
	switch {
	case len(pos) < min:
		return nil, usageErr("missing %s (usage: admin %s %s)", names, f.cmd.name, f.cmd.args)
	case max >= 0 && len(pos) > max:
		return nil, usageErr("unexpected argument %q (usage: admin %s %s)", pos[max], f.cmd.name, f.cmd.args)
	}
	return pos, nil
}

// required checks that each named string flag is set.
func required(vals ...string) error {
	for i := 0; i+1 < len(vals); i += 2 {
		if vals[i+1] == "" {
			return usageErr("--%s is required", vals[i])
		}
	}
	return nil
}

// stringList is a flag that may be repeated.
type stringList []string

func (s *stringList) String() string { return strings.Join(*s, ",") }
func (s *stringList) Set(v string) error {
	*s = append(*s, v)
	return nil
}

func tenantFlag(f *flags) *string {
	return f.String("tenant", "", "the tenant")
}

func clusterFlag(f *flags) *string {
	return f.String("cluster", "", "the cluster")
}

func parseID(s string) (string, error) {
	if n, err := strconv.ParseInt(s, 10, 64); err != nil || n <= 0 {
		return "", usageErr("ID %q: want the number that the list command shows", s)
	}
	return s, nil
}

// durationFlag checks a duration flag's value; empty is not set.
func durationFlag(name, v string) error {
	if _, err := time.ParseDuration(v); v != "" && err != nil {
		return usageErr("--%s %q: want a duration such as 720h", name, v)
	}
	return nil
}

// timeFlag checks a --since/--until value: RFC3339, or a Go duration
// meaning that long ago.
func timeFlag(name, v string) error {
	if v == "" {
		return nil
	}
	if _, err := time.ParseDuration(v); err == nil {
		return nil
	}
	if _, err := time.Parse(time.RFC3339, v); err == nil {
		return nil
	}
	return usageErr("--%s %q: want a duration (1h, meaning an hour ago) or an RFC3339 time", name, v)
}

func limitFlag(n, max int) error {
	if n < 1 || n > max {
		return usageErr("--limit %d: want 1 to %d", n, max)
	}
	return nil
}

// listQuery is the query of a filtered listing (decisions, audit): the
// filters that were given, and --limit.
func listQuery(limit int, filters map[string]string) url.Values {
	q := url.Values{}
	for k, v := range filters {
		if v != "" {
			q.Set(k, v)
		}
	}
	q.Set(apiv1.QueryLimit, strconv.Itoa(limit))
	return q
}

// objectFlags are the flags that pick one stored object.
type objectFlags struct {
	group     *optionalString
	namespace *string
}

// optionalString is a string flag that tells whether it was given, so
// that --group "" (the core group) differs from no --group.
type optionalString struct {
	value string
	set   bool
}

func (o *optionalString) String() string { return o.value }
func (o *optionalString) Set(v string) error {
	o.value, o.set = v, true
	return nil
}

func (f *flags) object() objectFlags {
	o := objectFlags{group: &optionalString{}, namespace: new(string)}
	f.Var(o.group, "group", "API `group` of KIND, when the tenant stores that kind in several groups (\"\" for the core group, as of v1 ConfigMaps)")
	f.StringVar(o.namespace, "namespace", "", "namespace of a namespaced param")
	f.StringVar(o.namespace, "n", "", "short for --namespace")
	return o
}

func (o objectFlags) query() url.Values {
	q := url.Values{}
	// group= (empty) is the core group; without group the server finds
	// the group of KIND.
	if o.group.set {
		q.Set("group", o.group.value)
	}
	if *o.namespace != "" {
		q.Set("namespace", *o.namespace)
	}
	return q
}
