package cli

import (
	"fmt"
	"io"
	"strconv"
	"time"

	"github.com/portcullis-dev/portcullis/internal/apiv1"
)

func cmdHistory(e *env, args []string) error {
	f := e.newFlags("history")
	c := f.conn(true)
	tenant := tenantFlag(f)
	obj := f.object()
	pos, err := f.parse(args, 2, 2, "KIND NAME")
	if err != nil {
		return err
	}
	if err := required("tenant", *tenant); err != nil {
		return err
	}
	cl, err := e.connect(c)
	if err != nil {
		return err
	}
	versions, raw, err := listAll[apiv1.Version](e, cl, apiPath("tenants", *tenant, "objects", pos[0], pos[1], "history"), obj.query())
	if err != nil {
		return err
	}
	return e.emit(c, raw, func(w io.Writer) error { return printHistory(w, e.now(), versions) })
}

func printHistory(w io.Writer, now time.Time, versions []apiv1.Version) error {
	t := newTable(w, "VERSION", "OPERATION", "AUTHOR", "API VERSION", "NOTE", "AGE")
	for _, v := range versions {
		note := ""
		if v.RollbackOf != 0 {
			note = "rollback to version " + strconv.FormatInt(v.RollbackOf, 10)
		}
		t.row(strconv.FormatInt(v.Version, 10), v.Operation, v.Author, v.APIVersion, note, age(now, v.Time))
	}
	return t.flush()
}

func parseVersion(flagName, s string) (int64, error) {
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n <= 0 {
		return 0, usageErr("--%s %q: want a version number as `admin history` shows it", flagName, s)
	}
	return n, nil
}

func cmdDiff(e *env, args []string) error {
	f := e.newFlags("diff")
	c := f.conn(true)
	tenant := tenantFlag(f)
	obj := f.object()
	from := f.String("from", "", "the older version")
	to := f.String("to", "", "the newer version (default: the current one)")
	pos, err := f.parse(args, 2, 2, "KIND NAME")
	if err != nil {
		return err
	}
	if err := required("tenant", *tenant, "from", *from); err != nil {
		return err
	}
	q := obj.query()
	// In a fixed order, so that with both wrong the first is reported.
	for _, fv := range [][2]string{{"from", *from}, {"to", *to}} {
		if fv[1] == "" {
			continue
		}
		if _, err := parseVersion(fv[0], fv[1]); err != nil {
			return err
		}
		q.Set(fv[0], fv[1])
	}
	cl, err := e.connect(c)
	if err != nil {
		return err
	}
	var d apiv1.Diff
	raw, err := cl.getJSON(e, apiPath("tenants", *tenant, "objects", pos[0], pos[1], "diff"), q, &d)
	if err != nil {
		return err
	}
	return e.emit(c, raw, func(w io.Writer) error {
		if d.Diff == "" {
			_, err := fmt.Fprintf(w, "versions %d and %d are the same\n", d.From, d.To)
			return err
		}
		_, err := io.WriteString(w, d.Diff)
		return err
	})
}
