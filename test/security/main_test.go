// Package security is the regression suite of issue 21: each attack the
// adversarial review tried, as a test that failed before its fix. The
// README lists them.
package security

import (
	"testing"

	"github.com/portcullis-dev/portcullis/internal/pgtest"
)

// TestMain stops the PostgreSQL server that pgtest starts. It is the
// suite's only TestMain.
func TestMain(m *testing.M) { pgtest.Main(m) }
