package cli

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"k8s.io/apimachinery/pkg/util/duration"
	"sigs.k8s.io/yaml"
)

func (e *env) printf(format string, args ...any) { fmt.Fprintf(e.stdout, format, args...) }

// emit prints an API answer: raw (the answer unchanged) for -o json, the
// same as YAML for -o yaml, else the human form.
func (e *env) emit(c *connFlags, raw []byte, human func(w io.Writer) error) error {
	switch c.output {
	case "json":
		if _, err := e.stdout.Write(raw); err != nil {
			return err
		}
		if !bytes.HasSuffix(raw, []byte("\n")) {
			_, err := io.WriteString(e.stdout, "\n")
			return err
		}
		return nil
	case "yaml":
		y, err := yaml.JSONToYAML(raw)
		if err != nil {
			return fmt.Errorf("the server's answer as YAML: %w", err)
		}
		_, err = e.stdout.Write(y)
		return err
	}
	return human(e.stdout)
}

// table prints aligned columns as kubectl does: upper-case headers and at
// least three spaces between columns. AGE, when there is one, is the last
// column.
type table struct {
	tw *tabwriter.Writer
}

func newTable(w io.Writer, headers ...string) *table {
	t := &table{tw: tabwriter.NewWriter(w, 0, 8, 3, ' ', 0)}
	t.row(headers...)
	return t
}

func (t *table) row(cells ...string) {
	for i, c := range cells {
		if c == "" {
			cells[i] = "<none>"
		}
		// A tab or newline in a cell would break the columns.
		cells[i] = strings.NewReplacer("\t", " ", "\n", " ").Replace(cells[i])
	}
	fmt.Fprintln(t.tw, strings.Join(cells, "\t"))
}

func (t *table) flush() error { return t.tw.Flush() }

// age is how long ago t was, as kubectl prints it.
func age(now, t time.Time) string {
	if t.IsZero() {
		return "<unknown>"
	}
	return duration.HumanDuration(now.Sub(t))
}

// until is how long until t, or "<none>" for no time.
func until(now time.Time, t *time.Time) string {
	if t == nil {
		return "<none>"
	}
	if !t.After(now) {
		return "expired " + duration.HumanDuration(now.Sub(*t)) + " ago"
	}
	return "in " + duration.HumanDuration(t.Sub(now))
}

// ago is how long ago t was, or "<never>".
func ago(now time.Time, t *time.Time) string {
	if t == nil {
		return "<never>"
	}
	return duration.HumanDuration(now.Sub(*t)) + " ago"
}

// labels prints a label map as k=v,k=v, sorted.
func labels(m map[string]string) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = k + "=" + m[k]
	}
	return strings.Join(parts, ",")
}

// parseLabels reads k=v,k=v.
func parseLabels(s string) (map[string]string, error) {
	if s == "" {
		return nil, nil
	}
	m := map[string]string{}
	for _, kv := range strings.Split(s, ",") {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || strings.TrimSpace(k) == "" {
			return nil, usageErr("--labels %q: want k=v,k=v", s)
		}
		m[strings.TrimSpace(k)] = strings.TrimSpace(v)
	}
	return m, nil
}

func indentJSON(b []byte) []byte {
	var out bytes.Buffer
	if json.Indent(&out, b, "", "  ") != nil {
		return b
	}
	return out.Bytes()
}
