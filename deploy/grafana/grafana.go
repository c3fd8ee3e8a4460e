// Package grafana holds the Grafana dashboards and reads the queries out of
// them, so that tests can check each query against the gateway's metrics
// and the decisions table.
package grafana

import (
	"embed"
	"encoding/json"
	"fmt"
	"io/fs"
	"slices"
	"strings"
)

// Dashboards are the dashboard JSON files, as Grafana imports them.
//
//go:embed *.json
var Dashboards embed.FS

// Query is one query of a dashboard: a panel target or a template variable.
type Query struct {
	Dashboard string // file name
	Where     string // panel title or "variable <name>"
	// Datasource is the datasource reference as written, e.g. ${datasource}.
	Datasource string
	Expr       string // PromQL
	RawSQL     string // SQL
}

type datasourceRef struct {
	Type string `json:"type"`
	UID  string `json:"uid"`
}

type panel struct {
	Title      string         `json:"title"`
	Datasource *datasourceRef `json:"datasource"`
	Targets    []struct {
		Datasource *datasourceRef `json:"datasource"`
		Expr       string         `json:"expr"`
		RawSQL     string         `json:"rawSql"`
	} `json:"targets"`
	Panels []panel `json:"panels"` // a collapsed row's panels
}

// Dashboard is the part of a dashboard that the checks read.
type Dashboard struct {
	UID        string `json:"uid"`
	Title      string `json:"title"`
	Templating struct {
		List []struct {
			Name       string          `json:"name"`
			Type       string          `json:"type"`
			Datasource *datasourceRef  `json:"datasource"`
			Query      json.RawMessage `json:"query"`
		} `json:"list"`
	} `json:"templating"`
	Panels []panel `json:"panels"`
}

// Load parses one dashboard.
func Load(name string) (*Dashboard, error) {
	b, err := Dashboards.ReadFile(name)
	if err != nil {
		return nil, err
	}
	var d Dashboard
	if err := json.Unmarshal(b, &d); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return &d, nil
}

// Names lists the dashboard files.
func Names() []string {
	names, _ := fs.Glob(Dashboards, "*.json")
	return names
}

// Queries returns every query of every dashboard.
func Queries() ([]Query, error) {
	var out []Query
	for _, name := range Names() {
		d, err := Load(name)
		if err != nil {
			return nil, err
		}
		for _, v := range d.Templating.List {
			if v.Type != "query" {
				continue
			}
			q := Query{Dashboard: name, Where: "variable " + v.Name, Datasource: uidOf(v.Datasource)}
			// A Prometheus variable's query is an object, a SQL one a string.
			var text string
			var obj struct{ Query string }
			if json.Unmarshal(v.Query, &text) != nil {
				if err := json.Unmarshal(v.Query, &obj); err != nil {
					return nil, fmt.Errorf("%s: variable %s: %w", name, v.Name, err)
				}
				text = obj.Query
			}
			if v.Datasource != nil && strings.Contains(v.Datasource.Type, "postgres") {
				q.RawSQL = text
			} else {
				q.Expr = text
			}
			out = append(out, q)
		}
		var walk func([]panel)
		walk = func(ps []panel) {
			for _, p := range ps {
				for _, t := range p.Targets {
					ds := t.Datasource
					if ds == nil {
						ds = p.Datasource
					}
					out = append(out, Query{Dashboard: name, Where: p.Title, Datasource: uidOf(ds), Expr: t.Expr, RawSQL: t.RawSQL})
				}
				walk(p.Panels)
			}
		}
		walk(d.Panels)
	}
	return out, nil
}

func uidOf(ds *datasourceRef) string {
	if ds == nil {
		return ""
	}
	return ds.UID
}

// groupingWords start a parenthesised list of label names.
var groupingWords = map[string]bool{
	"by": true, "without": true, "on": true, "ignoring": true, "group_left": true, "group_right": true,
}

// operatorWords are PromQL's keyword operators and literals.
var operatorWords = map[string]bool{
	"and": true, "or": true, "unless": true, "offset": true, "bool": true, "atan2": true,
	"inf": true, "nan": true, "Inf": true, "NaN": true,
}

// Refs is what a PromQL expression reads.
type Refs struct {
	// Metrics are the metric names, sorted and without duplicates.
	Metrics []string
	// Matchers are the label names each metric is selected by, as in
	// name{tenant=~"..."}.
	Matchers map[string][]string
	// Grouping are the label names of by, without, on, ignoring,
	// group_left and group_right clauses.
	Grouping []string
}

// MetricNames returns the metric names a PromQL expression reads.
func MetricNames(expr string) []string { return Parse(expr).Metrics }

// Parse reads the metric and label names of a PromQL expression, or of a
// Grafana label_values() variable query. It is a tokenizer, not a parser:
// it skips strings, range selectors [...], function calls, keywords and
// Grafana $variables.
func Parse(expr string) Refs {
	r := Refs{Matchers: map[string][]string{}}
	// Grafana's label_values(metric, label) names a metric, then a label;
	// label_values(label) names none.
	if args, ok := strings.CutPrefix(strings.TrimSpace(expr), "label_values("); ok {
		metric, label, found := strings.Cut(strings.TrimSuffix(args, ")"), ",")
		if !found {
			return r
		}
		r = Parse(metric)
		r.Grouping = append(r.Grouping, strings.TrimSpace(label))
		return r
	}
	labelList := false // inside the parentheses after by, without, on...
	pendingList := false
	last := "" // the metric just read, whose {matchers} may follow
	for i := 0; i < len(expr); {
		c := expr[i]
		metric := ""
		switch {
		case c == '"' || c == '\'' || c == '`':
			i = skipString(expr, i)
		case c == '{':
			end := skipTo(expr, i, '}')
			if last != "" {
				r.Matchers[last] = append(r.Matchers[last], words(expr[i+1:end-1])...)
			}
			i = end
		case c == '[':
			i = skipTo(expr, i, ']')
		case c == '$':
			j := i + 1
			for j < len(expr) && (isWord(expr[j]) || expr[j] == '{' || expr[j] == '}' || expr[j] == ':') {
				j++
			}
			i = j
		case c == '(':
			if pendingList {
				labelList, pendingList = true, false
			}
			i++
		case c == ')':
			labelList = false
			i++
		case isWordStart(c):
			j := i
			for j < len(expr) && isWord(expr[j]) {
				j++
			}
			word := expr[i:j]
			rest := strings.TrimLeft(expr[j:], " ")
			// An aggregation may put its by/without clause before its
			// parentheses: sum by (le) (...).
			isCall := strings.HasPrefix(rest, "(") || strings.HasPrefix(rest, "by ") || strings.HasPrefix(rest, "by(") ||
				strings.HasPrefix(rest, "without ") || strings.HasPrefix(rest, "without(")
			switch {
			case labelList:
				r.Grouping = append(r.Grouping, word)
			case groupingWords[word]:
				pendingList = true
			case operatorWords[word], isCall:
			default:
				r.Metrics = append(r.Metrics, word)
				metric = word
			}
			i = j
		case c >= '0' && c <= '9' || c == '.':
			// A number, possibly with a duration or exponent suffix.
			for i < len(expr) && (isWord(expr[i]) || expr[i] == '.') {
				i++
			}
		default:
			i++
		}
		if metric != "" || c != ' ' {
			last = metric
		}
	}
	slices.Sort(r.Metrics)
	r.Metrics = slices.Compact(r.Metrics)
	slices.Sort(r.Grouping)
	r.Grouping = slices.Compact(r.Grouping)
	return r
}

// words returns the unquoted words of a label matcher list: its label names.
func words(matchers string) []string {
	var out []string
	for i := 0; i < len(matchers); {
		c := matchers[i]
		switch {
		case c == '"' || c == '\'' || c == '`':
			i = skipString(matchers, i)
		case isWordStart(c):
			j := i
			for j < len(matchers) && isWord(matchers[j]) {
				j++
			}
			out = append(out, matchers[i:j])
			i = j
		default:
			i++
		}
	}
	return out
}

// skipString returns the index after the quoted string that starts at i.
func skipString(s string, i int) int {
	quote := s[i]
	j := i + 1
	for j < len(s) && s[j] != quote {
		if s[j] == '\\' && quote != '`' {
			j++
		}
		j++
	}
	return j + 1
}

func skipTo(s string, i int, end byte) int {
	for i < len(s) && s[i] != end {
		if s[i] == '"' {
			i++
			for i < len(s) && s[i] != '"' {
				if s[i] == '\\' {
					i++
				}
				i++
			}
		}
		i++
	}
	return i + 1
}

func isWordStart(c byte) bool {
	return c == '_' || c == ':' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
}

func isWord(c byte) bool { return isWordStart(c) || c >= '0' && c <= '9' }
