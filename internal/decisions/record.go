package decisions

import (
	"slices"
	"strings"
	"time"
	"unicode/utf8"
)

// Record is a stored decision as the admin API shows it.
type Record struct {
	ID               string            `json:"id"`
	Time             time.Time         `json:"time"`
	Tenant           string            `json:"tenant"`
	Cluster          string            `json:"cluster"`
	UID              string            `json:"uid"`
	Operation        string            `json:"operation"`
	Group            string            `json:"group"`
	Version          string            `json:"version"`
	Resource         string            `json:"resource"`
	SubResource      string            `json:"subResource"`
	Kind             string            `json:"kind"`
	Namespace        string            `json:"namespace"`
	Name             string            `json:"name"`
	UserName         string            `json:"userName"`
	UserGroups       []string          `json:"userGroups"`
	DryRun           bool              `json:"dryRun"`
	Verdict          Verdict           `json:"verdict"`
	HTTPStatus       int               `json:"httpStatus"`
	Code             int               `json:"code"`
	Reason           string            `json:"reason"`
	Message          string            `json:"message"`
	Warnings         []string          `json:"warnings"`
	AuditAnnotations map[string]string `json:"auditAnnotations"`
	Bindings         []BindingRecord   `json:"bindings"`
	LatencyMs        float64           `json:"latencyMs"`
	Instance         string            `json:"instance"`
	SnapshotVersion  int64             `json:"snapshotVersion"`
}

// BindingRecord is one matched binding of a decision. The webhook hands
// them over in Decision.Bindings; the bindings column stores exactly this
// JSON, its text cleaned, so SQL (the Grafana dashboards) and the API see
// the same shape.
type BindingRecord struct {
	Policy               string   `json:"policy"`
	Binding              string   `json:"binding"`
	Param                string   `json:"param"`
	Outcome              string   `json:"outcome"`
	Denied               bool     `json:"denied"`
	FailurePolicyApplied bool     `json:"failurePolicyApplied"`
	Timeout              bool     `json:"timeout"`
	Error                string   `json:"error"`
	Messages             []string `json:"messages"`
}

// Page is one page of a listing, newest first. Continue is the cursor of
// the next page, empty on the last one.
type Page struct {
	Items    []Record `json:"items"`
	Continue string   `json:"continue"`
}

// bindingRecords is bs as stored: a copy, since the decision is not the
// recorder's to change, with every string clean.
func bindingRecords(bs []BindingRecord) []BindingRecord {
	out := make([]BindingRecord, len(bs))
	for i, b := range bs {
		out[i] = BindingRecord{
			Policy: clean(b.Policy), Binding: clean(b.Binding), Param: clean(b.Param),
			Outcome: b.Outcome, Denied: b.Denied, FailurePolicyApplied: b.FailurePolicyApplied,
			Timeout: b.Timeout, Error: clean(b.Error), Messages: cleanAll(b.Messages),
		}
	}
	return out
}

// summarize returns the policies with a binding that matched (its
// matchConditions held) and those of them whose binding denied, each once,
// and whether any binding's failurePolicy decided.
func summarize(recs []BindingRecord) (matched, denied []string, failurePolicyApplied bool) {
	matched, denied = []string{}, []string{}
	for _, b := range recs {
		failurePolicyApplied = failurePolicyApplied || b.FailurePolicyApplied
		if b.Outcome == OutcomeNotMatched {
			continue
		}
		if !slices.Contains(matched, b.Policy) {
			matched = append(matched, b.Policy)
		}
		if b.Denied && !slices.Contains(denied, b.Policy) {
			denied = append(denied, b.Policy)
		}
	}
	return matched, denied, failurePolicyApplied
}

// clean makes a string storable: PostgreSQL refuses NUL in text and \u0000
// in jsonb, and invalid UTF-8 in both. One such string from a request (a
// user name, a CEL message) must not make a whole batch fail forever.
func clean(s string) string {
	// Plain ASCII, the common case, is checked in one pass first: this
	// runs for every string of every decision.
	for i := 0; i < len(s); i++ {
		if c := s[i]; c == 0 || c >= utf8.RuneSelf {
			return cleanSlow(s)
		}
	}
	return s
}

func cleanSlow(s string) string {
	if strings.IndexByte(s, 0) >= 0 {
		s = strings.ReplaceAll(s, "\x00", "")
	}
	return strings.ToValidUTF8(s, "\uFFFD")
}

// cleanAll cleans every string and turns nil into an empty list, as the
// columns are NOT NULL.
func cleanAll(ss []string) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = clean(s)
	}
	return out
}
