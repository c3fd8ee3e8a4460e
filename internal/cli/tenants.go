package cli

import (
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/portcullis-dev/portcullis/internal/apiclient"
	"github.com/portcullis-dev/portcullis/internal/apiv1"
)

func cmdTenantCreate(e *env, args []string) error {
	f := e.newFlags("tenant create")
	c := f.conn(true)
	display := f.String("display-name", "", "a human name for the tenant")
	pos, err := f.parse(args, 1, 1, "NAME")
	if err != nil {
		return err
	}
	cl, err := e.connect(c)
	if err != nil {
		return err
	}
	var t apiv1.Tenant
	raw, err := cl.sendJSON(e, http.MethodPost, apiPath("tenants"), nil, apiv1.TenantCreate{Name: pos[0], DisplayName: *display}, &t)
	if err != nil {
		return err
	}
	return e.emit(c, raw, func(w io.Writer) error {
		_, err := fmt.Fprintf(w, "tenant %q created\n", t.Name)
		return err
	})
}

func cmdTenantList(e *env, args []string) error {
	f := e.newFlags("tenant list")
	c := f.conn(true)
	if _, err := f.parse(args, 0, 0, ""); err != nil {
		return err
	}
	cl, err := e.connect(c)
	if err != nil {
		return err
	}
	tenants, raw, err := listAll[apiv1.Tenant](e, cl, apiPath("tenants"), nil)
	if err != nil {
		return err
	}
	return e.emit(c, raw, func(w io.Writer) error { return printTenants(w, e.now(), tenants) })
}

func printTenants(w io.Writer, now time.Time, tenants []apiv1.Tenant) error {
	t := newTable(w, "NAME", "DISPLAY NAME", "AGE")
	for _, x := range tenants {
		t.row(x.Name, x.DisplayName, age(now, x.CreatedAt))
	}
	return t.flush()
}

func cmdTenantDelete(e *env, args []string) error {
	f := e.newFlags("tenant delete")
	c := f.conn(false)
	pos, err := f.parse(args, 1, 1, "NAME")
	if err != nil {
		return err
	}
	cl, err := e.connect(c)
	if err != nil {
		return err
	}
	if _, err := cl.do(e, apiclient.Request{Method: http.MethodDelete, Path: apiPath("tenants", pos[0])}); err != nil {
		return err
	}
	e.printf("tenant %q deleted\n", pos[0])
	return nil
}
