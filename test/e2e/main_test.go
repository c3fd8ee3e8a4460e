// Package e2e runs a real kube-apiserver as the client of a real gateway:
// the apiserver is configured only with the files `admin cluster create`
// writes, and Pods created through it must carry the sample mutations and
// meet the baseline policies. It is its own module because it builds
// k8s.io/kubernetes, which the gateway must not depend on; `make e2e` runs
// it (docs/development.md says how long it takes).
package e2e

import (
	"testing"

	"github.com/portcullis-dev/portcullis/internal/pgtest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }
