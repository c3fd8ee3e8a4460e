// Command admin manages a Portcullis gateway: database migrations, the
// first operator token, and (through the admin API) tenants, clusters,
// credentials and policies. The logic is in internal/cli.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/portcullis-dev/portcullis/internal/adminauth"
	"github.com/portcullis-dev/portcullis/internal/cli"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	code := cli.Run(ctx, os.Args[1:], cli.Process{Stdout: os.Stdout, Stderr: os.Stderr, Getenv: os.Getenv,
		Bootstrap: adminauth.Bootstrap})
	stop()
	os.Exit(code)
}
