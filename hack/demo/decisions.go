package main

import (
	"context"
	"fmt"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/portcullis-dev/portcullis/internal/database"
	"github.com/portcullis-dev/portcullis/internal/decisions"
	"github.com/portcullis-dev/portcullis/internal/tenancy"
)

// listDecisions prints the demo tenant's latest decisions, as stored by the
// gateway. The recorder writes within 200 ms; wait a little for the ones
// just sent.
func listDecisions(ctx context.Context, url string) error {
	pool, err := database.Open(ctx, url)
	if err != nil {
		return err
	}
	defer pool.Close()
	tenant, err := tenancy.NewStore(pool, nil).FindTenantByName(ctx, tenantName)
	if err != nil {
		return fmt.Errorf("tenant %q: %w", tenantName, err)
	}
	store := decisions.NewStore(pool)
	var page decisions.Page
	for range 20 {
		if page, err = store.List(ctx, tenant.ID, decisions.Filter{Limit: 10}); err != nil || len(page.Items) > 0 {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err != nil {
		return err
	}
	w := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(w, "TIME\tVERDICT\tOPERATION\tRESOURCE\tNAMESPACE/NAME\tDENIED BY\tLATENCY")
	for _, r := range page.Items {
		var denied []string
		for _, b := range r.Bindings {
			if b.Denied {
				denied = append(denied, b.Policy)
			}
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s/%s\t%s\t%.2f ms\n", r.Time.Local().Format(time.TimeOnly), r.Verdict,
			r.Operation, r.Resource, r.Namespace, r.Name, strings.Join(denied, ","), r.LatencyMs)
	}
	return w.Flush()
}
