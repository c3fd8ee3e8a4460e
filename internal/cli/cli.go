// Package cli is the `admin` command: database migrations and the first
// operator token (directly on the database), and everything else as a thin
// client of the admin REST API, much as kubectl is of the apiserver. The
// HTTP commands speak only the wire types of internal/apiv1.
package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"github.com/jackc/pgx/v5/pgxpool"
	"io"
	"os"
	"sort"
	"strings"
	"time"
)

// Exit codes.
const (
	exitOK      = 0
	exitFailure = 1 // the server or the runtime failed
	exitUsage   = 2 // the command line is wrong
)

// exitError carries a process exit code.
type exitError struct {
	code int
	err  error
}

func (e exitError) Error() string { return e.err.Error() }
func (e exitError) Unwrap() error { return e.err }

func usageErr(format string, args ...any) error {
	return exitError{exitUsage, fmt.Errorf(format, args...)}
}

// env is what a command runs with.
type env struct {
	ctx       context.Context
	stdout    io.Writer
	stderr    io.Writer
	stdin     io.Reader
	getenv    func(string) string
	now       func() time.Time
	bootstrap Bootstrapper
}

// Bootstrapper creates the first operator token in a migrated database and
// returns it. The admin binary wires in the admin-token store's: the token
// format and the once-only rule live with the tokens, and the CLI reaches
// no store of its own (bootstrap cannot call the API: there is no token
// yet).
type Bootstrapper func(ctx context.Context, pool *pgxpool.Pool, name string) (token string, err error)

// Process is what Run takes from the process it runs in.
type Process struct {
	Stdout, Stderr io.Writer
	Getenv         func(string) string
	// Bootstrap serves `admin bootstrap`; without it the command fails.
	Bootstrap Bootstrapper
}

type command struct {
	// name is one or two words: "apply", "tenant create".
	name    string
	args    string // the synopsis after the name
	summary string
	run     func(e *env, args []string) error
}

func commands() []command {
	return []command{
		{"migrate", "--database-url URL", "apply pending database migrations, then grant the Grafana role portcullis_dashboards its reads", cmdMigrate},
		{"bootstrap", "--database-url URL", "create the first operator token and print it once", cmdBootstrap},
		{"login", "--server URL (--token T | --token-stdin | --token-file F) [--ca-file F]", "check a token and save the connection in the config file", cmdLogin},
		{"whoami", "", "show the token in use", cmdWhoAmI},
		{"tenant create", "NAME [--display-name D]", "create a tenant (operator)", cmdTenantCreate},
		{"tenant list", "", "list tenants", cmdTenantList},
		{"tenant delete", "NAME", "delete a tenant and everything in it (operator)", cmdTenantDelete},
		{"tenant limits", "NAME", "show a tenant's evaluation limits and inventory bounds: effective, override and default", cmdTenantLimits},
		{"tenant set-limits", "NAME [--concurrent-evaluations N] [--cel-cost-per-request N] [--requests-per-second R] [--max-namespaces-per-cluster N] [--max-crds-per-cluster N]", "override a tenant's evaluation limits and inventory bounds; 0 restores the default (operator)", cmdTenantSetLimits},
		{"cluster create", "NAME --tenant T [--auth token|cert|basic] [--webhook-url URL] [--labels k=v,...] --out DIR", "create a cluster, its first credential and the files its apiservers need", cmdClusterCreate},
		{"cluster list", "--tenant T [--selector k=v]", "list a tenant's clusters", cmdClusterList},
		{"cluster label", "NAME --tenant T k=v ... k- ... [--overwrite]", "set (k=v) or remove (k-) a cluster's labels", cmdClusterLabel},
		{"cluster delete", "NAME --tenant T", "delete a cluster and its credentials", cmdClusterDelete},
		{"cluster artifacts", "NAME --tenant T [--webhook-url URL] --out DIR", "rewrite a cluster's webhooks.yaml and admission-configuration.yaml from the tenant's policies; issues no credential", cmdClusterArtifacts},
		{"credential list", "--tenant T --cluster C [--active]", "list a cluster's credentials", cmdCredentialList},
		{"credential create", "--tenant T --cluster C [--auth token|cert|basic] [--expires DURATION] [--out DIR]", "issue a new credential; prints the secret once", cmdCredentialCreate},
		{"credential revoke", "ID --tenant T --cluster C", "revoke a credential", cmdCredentialRevoke},
		{"credential rotate", "ID --tenant T --cluster C [--grace DURATION] [--out DIR]", "issue a replacement; the old one expires after the grace period", cmdCredentialRotate},
		{"namespaces import", "--tenant T --cluster C -f FILE|-", "replace a cluster's namespace inventory", cmdNamespacesImport},
		{"namespaces sync", "--tenant T --cluster C [--kubeconfig FILE] [--watch] [--crds=false]", "keep a cluster's namespace (and CRD) inventory exact from its apiserver, with a sync token", cmdNamespacesSync},
		{"crds import", "--tenant T --cluster C -f FILE|-", "replace a cluster's CustomResourceDefinitions", cmdCRDsImport},
		{"apply", "--tenant T -f FILE|DIR|- [--dry-run]", "create or update policies, bindings and params", cmdApply},
		{"catalog list", "[--tenant T]", "list the policy catalog's entries (with --tenant, the installed versions)", cmdCatalogList},
		{"catalog show", "NAME", "print a catalog entry's objects as YAML", cmdCatalogShow},
		{"catalog install", "NAME --tenant T [--action Deny|Warn|Audit] [--cluster-selector SEL] [--dry-run]", "install a catalog entry's policies, bindings and params", cmdCatalogInstall},
		{"catalog upgrade", "NAME --tenant T [--dry-run] [--yes]", "show the diff to the catalog's version of an installed entry, then replace it", cmdCatalogUpgrade},
		{"get", "--tenant T (policies|bindings|params|namespaces|crds|KIND) [NAME] [--cluster C]", "list or show stored objects", cmdGet},
		{"delete", "--tenant T -f FILE | KIND NAME", "delete stored objects", cmdDelete},
		{"history", "--tenant T KIND NAME", "list an object's versions", cmdHistory},
		{"diff", "--tenant T KIND NAME --from VERSION [--to VERSION]", "show what changed between two versions", cmdDiff},
		{"rollback", "--tenant T KIND NAME --to VERSION", "restore an earlier version", cmdRollback},
		{"test", "--tenant T --cluster C -f review.json [--explain] [--mutate | --validate]", "evaluate an AdmissionReview as the webhooks would (mutate, then validate; or the one flagged)", cmdTest},
		{"decisions", "--tenant T [--since 1h] [--verdict denied] [--cluster C] [--policy P] [--limit N]", "list the webhook's recent decisions", cmdDecisions},
		{"token create", "--name N --role operator|admin|viewer|sync [--tenant T] [--cluster C] [--expires DURATION]", "create an admin API token; prints it once", cmdTokenCreate},
		{"token list", "[--tenant T] [--active]", "list admin API tokens", cmdTokenList},
		{"token revoke", "ID [--cascade]", "revoke an admin API token (and, with --cascade, every token it minted)", cmdTokenRevoke},
		{"audit", "[--tenant T] [--since 24h] [--actor token:ID] [--actor-name N] [--kind K] [--name N]", "query the audit log of mutating calls", cmdAudit},
	}
}

// Run runs the admin command line args and returns the process exit code.
func Run(ctx context.Context, args []string, p Process) int {
	e := &env{ctx: ctx, stdout: p.Stdout, stderr: p.Stderr, stdin: os.Stdin, getenv: p.Getenv, now: time.Now, bootstrap: p.Bootstrap}
	return e.run(args)
}

func (e *env) run(args []string) int {
	if len(args) == 0 {
		usage(e.stderr)
		return exitUsage
	}
	if args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		usage(e.stdout)
		return exitOK
	}
	c, rest, err := lookup(args)
	if err != nil {
		fmt.Fprintf(e.stderr, "admin: %v\n", err)
		return exitUsage
	}
	err = c.run(e, rest)
	switch {
	case err == nil, errors.Is(err, flag.ErrHelp):
		return exitOK
	}
	fmt.Fprintf(e.stderr, "admin %s: %v\n", c.name, err)
	var ee exitError
	if errors.As(err, &ee) {
		return ee.code
	}
	return exitFailure
}

// lookup finds the command named by the first one or two words of args.
func lookup(args []string) (command, []string, error) {
	all := commands()
	if len(args) > 1 {
		for _, c := range all {
			if c.name == args[0]+" "+args[1] {
				return c, args[2:], nil
			}
		}
	}
	var verbs []string
	for _, c := range all {
		if c.name == args[0] {
			return c, args[1:], nil
		}
		if group, verb, ok := strings.Cut(c.name, " "); ok && group == args[0] {
			verbs = append(verbs, verb)
		}
	}
	if len(verbs) > 0 {
		sort.Strings(verbs)
		if len(args) == 1 {
			return command{}, nil, fmt.Errorf("%s needs a subcommand: %s", args[0], strings.Join(verbs, ", "))
		}
		return command{}, nil, fmt.Errorf("unknown subcommand %q of %s (one of %s)", args[1], args[0], strings.Join(verbs, ", "))
	}
	return command{}, nil, fmt.Errorf("unknown command %q (run `admin help`)", args[0])
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "Usage: admin COMMAND [flags]\n\nCommands:")
	for _, c := range commands() {
		fmt.Fprintf(w, "  %-18s %s\n", c.name, c.summary)
	}
	fmt.Fprintln(w, `
The commands other than migrate and bootstrap call the admin API. They take
--server, --token and --ca-file, else PORTCULLIS_SERVER, PORTCULLIS_TOKEN and
PORTCULLIS_CA_FILE, else the config file written by `+"`admin login`"+`.
Output is a table; -o json prints the API's answer, -o yaml the same as YAML.

Run `+"`admin COMMAND -h`"+` for a command's flags.`)
}
