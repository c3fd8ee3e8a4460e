package inventory

import (
	"fmt"
	"testing"

	"github.com/portcullis-dev/portcullis/internal/pgtest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

func errorf(format string, args ...any) error { return fmt.Errorf(format, args...) }
