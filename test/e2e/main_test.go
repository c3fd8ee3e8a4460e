// Package e2e runs a real kube-apiserver as the client of a real gateway:
// the apiserver is configured only with the files `admin cluster create`
// writes, and Pods created through it must carry the sample mutations and
// meet the baseline policies. It is its own module because it builds
// k8s.io/kubernetes, which the gateway must not depend on; `make e2e` runs
// it (docs/development.md says how long it takes).
package e2e

import (
	"testing"
	"time"

	"github.com/portcullis-dev/portcullis/internal/pgtest"
	"github.com/portcullis-dev/portcullis/internal/testutil"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// eventually is testutil.Eventually for conditions that cost an API
// request or an admin process each: it pauses between tries rather than
// retrying every few milliseconds.
func eventually(t *testing.T, limit time.Duration, what string, cond func() bool) {
	t.Helper()
	testutil.Eventually(t, limit, what, func() bool {
		if cond() {
			return true
		}
		time.Sleep(100 * time.Millisecond)
		return false
	})
}
