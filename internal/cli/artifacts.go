package cli

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"sigs.k8s.io/yaml"

	"github.com/portcullis-dev/portcullis/internal/apiv1"
)

// artifactFiles are the files of --out, in the order they are written.
var artifactFiles = []string{"kubeconfig.yaml", "admission-configuration.yaml", "webhooks.yaml"}

// prepareOut creates the --out directory and checks that its files can be
// written, before the server is asked for a secret it shows only once.
func prepareOut(dir string) error {
	fail := func(err error) error { return exitError{exitUsage, fmt.Errorf("--out %s: %w", dir, err)} }
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fail(err)
	}
	probe, err := os.CreateTemp(dir, ".admin-write-check-*")
	if err != nil {
		return fail(err)
	}
	probe.Close()
	if err := os.Remove(probe.Name()); err != nil {
		return fail(err)
	}
	for _, name := range artifactFiles {
		p := filepath.Join(dir, name)
		st, err := os.Stat(p)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			continue
		case err != nil:
			return fail(err)
		case !st.Mode().IsRegular():
			return fail(fmt.Errorf("%s is not a regular file", p))
		}
		// An existing file is overwritten: it must be writable. Opened
		// without O_TRUNC, it is left as it is.
		f, err := os.OpenFile(p, os.O_WRONLY, 0)
		if err != nil {
			return fail(err)
		}
		f.Close()
	}
	return nil
}

// saveArtifacts writes the artifacts of a new credential to dir. If that
// fails, the server's answer goes to stdout, so that the secret it holds,
// shown only this once, is not lost.
func (e *env) saveArtifacts(dir string, a apiv1.Artifacts, raw []byte) ([]string, error) {
	written, err := writeArtifacts(dir, a)
	if err != nil {
		e.printf("%s\n", indentJSON(raw))
	}
	return written, err
}

// urlSecretExposure is the warning every issued url credential gets: the
// one place its secret leaves the cluster's objects that no RBAC rule
// closes (docs/tenancy.md, "url credentials").
const urlSecretExposure = "the URL secret is part of the webhook URL, and kube-apiserver prints that URL, secret included, " +
	"whenever a call to it fails (a timeout, a refused connection, a TLS error): in the error a user sees, in its logs and in its audit log. " +
	"Rotate the credential (admin credential rotate ID --grace 1h, then kubectl apply the new webhooks.yaml) after an outage of the gateway " +
	"or of the network between the cluster and the gateway."

// warnURLSecret prints urlSecretExposure to stderr, so that it is seen even
// when stdout is JSON for a script.
func (e *env) warnURLSecret() {
	fmt.Fprintf(e.stderr, "Warning: %s\n", urlSecretExposure)
}

// writeArtifacts writes the files `cluster create` and `credential create
// --out` promise. The kubeconfig holds a secret.
func writeArtifacts(dir string, a apiv1.Artifacts) ([]string, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	var written []string
	for _, f := range []struct {
		name, content string
		mode          os.FileMode
	}{
		{artifactFiles[0], a.Kubeconfig, 0o600},
		{artifactFiles[1], a.AdmissionConfiguration, 0o644},
		{artifactFiles[2], a.Webhooks, webhooksMode(a)},
	} {
		if f.content == "" {
			continue
		}
		p := filepath.Join(dir, f.name)
		if err := replaceFile(p, []byte(f.content), f.mode); err != nil {
			return written, err
		}
		written = append(written, p)
	}
	return written, nil
}

// webhooksMode is 0600 when webhooks.yaml holds a url credential's secret.
func webhooksMode(a apiv1.Artifacts) os.FileMode {
	if a.WebhooksHoldSecret {
		return 0o600
	}
	return 0o644
}

// kubeconfigPath is the path the AdmissionConfiguration tells apiservers to
// read the kubeconfig from.
func kubeconfigPath(admissionConfiguration string) string {
	var cfg struct {
		Plugins []struct {
			Configuration struct {
				KubeConfigFile string `json:"kubeConfigFile"`
			} `json:"configuration"`
		} `json:"plugins"`
	}
	if yaml.Unmarshal([]byte(admissionConfiguration), &cfg) == nil {
		for _, p := range cfg.Plugins {
			if p.Configuration.KubeConfigFile != "" {
				return p.Configuration.KubeConfigFile
			}
		}
	}
	return ""
}

// wiringFor is the wiring paragraph for the artifacts of a credential:
// urlWiring when its webhooks carry a URL secret, else wiring.
func wiringFor(tenant, cluster, dir string, a apiv1.Artifacts) string {
	if a.WebhooksHoldSecret {
		return urlWiring(tenant, cluster, dir)
	}
	return wiring(tenant, cluster, dir, a)
}

// urlWiring is the wiring paragraph of a url credential: a managed control
// plane needs no file on its nodes, only the webhook configurations.
func urlWiring(tenant, cluster, dir string) string {
	return fmt.Sprintf("To wire the cluster in: first upload its namespaces with "+
		"`kubectl get namespaces -o yaml | admin namespaces import --tenant %s --cluster %s -f -`, "+
		"because bindings that select namespaces by label cannot be decided for namespaces the gateway has not seen, "+
		"and its custom resource definitions with `kubectl get crd -o yaml | admin crds import --tenant %s --cluster %s -f -`; "+
		"then run `kubectl apply -f %s` (a validating and a mutating webhook configuration). "+
		"This cluster authenticates by the secret in those webhooks' URLs, so it needs no AdmissionConfiguration "+
		"and no kubeconfig on the control plane, which is what a managed control plane (EKS, GKE, AKS) allows; "+
		"but anyone who can read the cluster's webhook configurations can read the secret: keep %s private "+
		"and let only cluster admins read validatingwebhookconfigurations and mutatingwebhookconfigurations.",
		tenant, cluster, tenant, cluster, filepath.Join(dir, "webhooks.yaml"), filepath.Join(dir, "webhooks.yaml"))
}

// wiring is the one paragraph on how to connect a cluster. The inventory
// (namespaces, CRDs) comes first: bindings that select namespaces by label
// cannot be decided for namespaces the gateway has not seen. A cluster
// without CRDs skips their import: kubectl then prints an empty List,
// which the import refuses as holding no objects.
func wiring(tenant, cluster, dir string, a apiv1.Artifacts) string {
	kc := kubeconfigPath(a.AdmissionConfiguration)
	where := "the path that admission-configuration.yaml names"
	if kc != "" {
		where = kc
	}
	return fmt.Sprintf("To wire the cluster in: first upload its namespaces with "+
		"`kubectl get namespaces -o yaml | admin namespaces import --tenant %s --cluster %s -f -`, "+
		"because bindings that select namespaces by label cannot be decided for namespaces the gateway has not seen, "+
		"and, if it has any, its custom resource definitions with `kubectl get crd -o yaml | admin crds import --tenant %s --cluster %s -f -`, "+
		"so that policies see a custom resource the apiserver converted for the webhook in the version they match; "+
		"then, on every control-plane node, copy %s to %s and %s next to it, and start kube-apiserver with "+
		"--admission-control-config-file pointing at admission-configuration.yaml; "+
		"finally run `kubectl apply -f %s` (a validating and a mutating webhook configuration), "+
		"and from then on the apiservers send their admission reviews to the gateway.",
		tenant, cluster, tenant, cluster,
		filepath.Join(dir, "kubeconfig.yaml"), where, filepath.Join(dir, "admission-configuration.yaml"),
		filepath.Join(dir, "webhooks.yaml"))
}

// wrap breaks s into lines of at most width columns, at spaces, but never
// inside a `command`, so that commands can be copied whole.
func wrap(s string, width int) string {
	var words []string
	for i, part := range strings.Split(s, "`") {
		if i%2 == 1 {
			words = append(words, "`"+part+"`")
			continue
		}
		fields := strings.Fields(part)
		// Punctuation right after a command stays on its line.
		if len(words) > 0 && len(fields) > 0 && !strings.HasPrefix(part, " ") {
			words[len(words)-1] += fields[0]
			fields = fields[1:]
		}
		words = append(words, fields...)
	}
	var b strings.Builder
	col := 0
	for _, word := range words {
		switch {
		case col == 0:
		case col+1+len(word) > width:
			b.WriteByte('\n')
			col = 0
		default:
			b.WriteByte(' ')
			col++
		}
		b.WriteString(word)
		col += len(word)
	}
	return b.String()
}
