//go:build browser

package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/portcullis-dev/portcullis/internal/adminauth"
	"github.com/portcullis-dev/portcullis/internal/pgtest"
)

// TestBrowserUI starts the real gateway on a throwaway PostgreSQL and runs
// the browser suite of test/ui against it (Debian's chromium, driven by
// playwright-core). It needs node, chromium and test/ui's npm packages,
// so it is built only with -tags browser: `make test-ui` installs them
// and runs it, and `make test` runs `make test-ui`.
func TestBrowserUI(t *testing.T) {
	db := pgtest.URL(t)
	m := startMain(t, testConfig(t, db))
	// A second replica on the same database: the suite checks that a
	// browser's session works on both.
	other := startMain(t, testConfig(t, db))
	token, err := adminauth.NewStore(m.Pool).Bootstrap(context.Background(), "ui-test")
	if err != nil {
		t.Fatal(err)
	}
	dir, err := filepath.Abs("../../test/ui")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", "--test", "--test-reporter=spec", "ui.test.mjs")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "UI_URL="+m.AdminURL(), "OTHER_UI_URL="+other.AdminURL(), "WEBHOOK_URL="+m.WebhookURL(), "CA_FILE="+m.CAFile, "TOKEN="+token)
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("browser suite: %v", err)
	}
}
