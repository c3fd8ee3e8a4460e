package cli

import (
	"fmt"
	"io"
	"net/http"

	"github.com/portcullis-dev/portcullis/internal/apiv1"
)

func cmdRollback(e *env, args []string) error {
	f := e.newFlags("rollback")
	c := f.conn(true)
	tenant := tenantFlag(f)
	obj := f.object()
	to := f.String("to", "", "the `VERSION` to restore, as admin history shows it")
	pos, err := f.parse(args, 2, 2, "KIND NAME")
	if err != nil {
		return err
	}
	if err := required("tenant", *tenant, "to", *to); err != nil {
		return err
	}
	v, err := parseVersion("to", *to)
	if err != nil {
		return err
	}
	cl, err := e.connect(c)
	if err != nil {
		return err
	}
	var it apiv1.ApplyItem
	raw, err := cl.sendJSON(e, http.MethodPost, apiPath("tenants", *tenant, "objects", pos[0], pos[1], "rollback"), obj.query(),
		apiv1.Rollback{ToVersion: v}, &it)
	if err != nil {
		return err
	}
	return e.emit(c, raw, func(w io.Writer) error {
		_, err := fmt.Fprintf(w, "%s %s to version %d (now version %d)\n", ref(it.APIVersion, it.Kind, it.Name), it.Action, v, it.ResourceVersion)
		return err
	})
}
