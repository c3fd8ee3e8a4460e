package decisions

import (
	"slices"
	"strings"
	"time"
	"unicode/utf8"
)

// Record is a stored decision; the admin API sends it as apiv1.Decision.
type Record struct {
	ID               string
	Time             time.Time
	Tenant           string
	Cluster          string
	UID              string
	Operation        string
	Group            string
	Version          string
	Resource         string
	SubResource      string
	Kind             string
	Namespace        string
	Name             string
	UserName         string
	UserGroups       []string
	DryRun           bool
	Verdict          Verdict
	HTTPStatus       int
	Code             int
	Reason           string
	Message          string
	Warnings         []string
	AuditAnnotations map[string]string
	Bindings         []BindingRecord
	LatencyMs        float64
	Instance         string
	SnapshotVersion  int64
	// Endpoint is validate or mutate. Mutated: the answer carried a patch.
	// MutatedBy: the policies whose mutations applied. Patch is the patch
	// as sent, cut at MaxPatchBytes when PatchTruncated (then not JSON).
	Endpoint       string
	Mutated        bool
	MutatedBy      []string
	Patch          string
	PatchTruncated bool
}

// BindingRecord is one matched binding of a decision. The webhook hands
// them over in Decision.Bindings; the bindings column stores exactly this
// JSON, its text cleaned, so SQL (the Grafana dashboards) and the API see
// the same shape: its json tags are the column's format, which
// apiv1.DecisionBinding repeats.
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
	// Mutated: a MutatingAdmissionPolicy's mutations applied (even one that
	// changed nothing, as the plugin counts it). Reinvoked: the result of
	// the plugin's second pass. Both are absent for validating bindings.
	Mutated   bool `json:"mutated,omitempty"`
	Reinvoked bool `json:"reinvoked,omitempty"`
}

// Page is one page of a listing, newest first. Continue is the cursor of
// the next page, empty on the last one.
type Page struct {
	Items    []Record
	Continue string
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
			Mutated: b.Mutated, Reinvoked: b.Reinvoked,
		}
	}
	return out
}

// summarize returns the policies with a binding that matched (its
// matchConditions held), those of them whose binding denied and those
// whose binding mutated, each once, and whether any binding's
// failurePolicy decided.
func summarize(recs []BindingRecord) (matched, denied, mutated []string, failurePolicyApplied bool) {
	matched, denied, mutated = []string{}, []string{}, []string{}
	for _, b := range recs {
		failurePolicyApplied = failurePolicyApplied || b.FailurePolicyApplied
		if b.Outcome == OutcomeNotMatched || b.Outcome == OutcomeClusterSkipped {
			continue
		}
		if !slices.Contains(matched, b.Policy) {
			matched = append(matched, b.Policy)
		}
		if b.Denied && !slices.Contains(denied, b.Policy) {
			denied = append(denied, b.Policy)
		}
		if b.Mutated && !slices.Contains(mutated, b.Policy) {
			mutated = append(mutated, b.Policy)
		}
	}
	return matched, denied, mutated, failurePolicyApplied
}

// endpoint is d's endpoint as stored.
func endpoint(d *Decision) string {
	if d.Endpoint == EndpointMutate {
		return EndpointMutate
	}
	return EndpointValidate
}

// storedPatch is the part of p the patch column keeps: at most
// MaxPatchBytes, cut at a character boundary, and whether it was cut.
func storedPatch(p []byte) ([]byte, bool) {
	if len(p) <= MaxPatchBytes {
		return p, false
	}
	n := MaxPatchBytes
	for n > 0 && !utf8.RuneStart(p[n]) {
		n--
	}
	return p[:n], true
}

// cleanBytes is clean for a []byte, without a copy when it is clean
// already (a patch is JSON, almost always ASCII).
func cleanBytes(p []byte) []byte {
	for _, c := range p {
		if c == 0 || c >= utf8.RuneSelf {
			return []byte(cleanSlow(string(p)))
		}
	}
	return p
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
