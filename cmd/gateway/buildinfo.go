package main

import (
	"fmt"
	"io"
	"runtime"
	"runtime/debug"

	"github.com/prometheus/client_golang/prometheus"
)

// version and revision are stamped at build time: -ldflags "-X
// main.version=v1.2.3 -X main.revision=<commit>" (the Dockerfile does it);
// without a revision, the one the go command recorded is used.
var version, revision = "dev", ""

// buildInfo is the version, the VCS revision the go command recorded and
// the Go version.
func buildInfo() (ver, rev, goVersion string) {
	rev = revision
	if bi, ok := debug.ReadBuildInfo(); ok && rev == "" {
		for _, s := range bi.Settings {
			if s.Key == "vcs.revision" {
				rev = s.Value
			}
		}
	}
	if rev == "" {
		rev = "unknown"
	}
	return version, rev, runtime.Version()
}

func printVersion(w io.Writer) {
	v, rev, gov := buildInfo()
	fmt.Fprintf(w, "portcullis gateway %s (revision %s, %s)\n", v, rev, gov)
}

// buildInfoCollector is portcullis_build_info: always 1, labelled with
// what runs, so dashboards can tell replicas of two versions apart.
func buildInfoCollector() prometheus.Collector {
	v, rev, gov := buildInfo()
	g := prometheus.NewGauge(prometheus.GaugeOpts{
		Name:        "portcullis_build_info",
		Help:        "The gateway's version, VCS revision and Go version; always 1.",
		ConstLabels: prometheus.Labels{"version": v, "revision": rev, "goversion": gov},
	})
	g.Set(1)
	return g
}
