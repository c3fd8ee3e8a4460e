package cli

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/portcullis-dev/portcullis/internal/apiv1"
)

// reviewResponse is what the human output shows of an AdmissionReview.
type reviewResponse struct {
	Response *struct {
		UID     string `json:"uid"`
		Allowed bool   `json:"allowed"`
		Result  *struct {
			Code    int    `json:"code"`
			Reason  string `json:"reason"`
			Message string `json:"message"`
		} `json:"status"`
		Patch            []byte            `json:"patch"`
		Warnings         []string          `json:"warnings"`
		AuditAnnotations map[string]string `json:"auditAnnotations"`
	} `json:"response"`
}

func printEvaluation(w io.Writer, res apiv1.EvaluateResponse, explain bool) error {
	if err := printReview(w, res.Review, ""); err != nil {
		return err
	}
	if err := printObject(w, res.Object); err != nil {
		return err
	}
	if !explain {
		return nil
	}
	printVersion(w, res)
	return printTrace(w, res.Trace)
}

// printChain prints an evaluation of the admission chain: which webhooks
// it called, and each one's answer.
func printChain(w io.Writer, res apiv1.EvaluateResponse, explain bool) error {
	validated := slices.Contains(res.Evaluated, "validate")
	if res.Mutation == nil {
		if err := printReview(w, res.Review, "validating webhook (no MutatingAdmissionPolicy matches)"); err != nil {
			return err
		}
	} else {
		if err := printReview(w, res.Mutation.Review, "mutating webhook"); err != nil {
			return err
		}
		if err := printObject(w, res.Object); err != nil {
			return err
		}
		label := "validating webhook, on the mutated object"
		if len(res.Object) == 0 {
			label = "validating webhook (the mutations changed nothing)"
		}
		if !validated {
			fmt.Fprintln(w, "validating webhook: not called, the mutating webhook denied the request")
		} else if err := printReview(w, res.Review, label); err != nil {
			return err
		}
	}
	if !explain {
		return nil
	}
	printVersion(w, res)
	if res.Mutation != nil {
		fmt.Fprintln(w, "\nmutating webhook:")
		if err := printTrace(w, res.Mutation.Trace); err != nil {
			return err
		}
		if validated {
			fmt.Fprintln(w, "\nvalidating webhook:")
		}
	}
	if !validated {
		return nil
	}
	return printTrace(w, res.Trace)
}

// printReview prints an AdmissionReview's verdict, after label when one is
// given, and its warnings, patch and audit annotations.
func printReview(w io.Writer, review json.RawMessage, label string) error {
	var rv reviewResponse
	if err := json.Unmarshal(review, &rv); err != nil || rv.Response == nil {
		return fmt.Errorf("the server's answer holds no AdmissionReview response")
	}
	r := rv.Response
	line := "allowed"
	if !r.Allowed {
		line = "denied"
		if r.Result != nil {
			line = fmt.Sprintf("denied (%d %s): %s", r.Result.Code, r.Result.Reason, r.Result.Message)
		}
	}
	if label != "" {
		line = label + ": " + line
	}
	fmt.Fprintln(w, line)
	for _, warn := range r.Warnings {
		fmt.Fprintf(w, "warning: %s\n", warn)
	}
	if len(r.Patch) > 0 {
		fmt.Fprintf(w, "patch: %s\n", r.Patch)
	}
	if len(r.AuditAnnotations) > 0 {
		fmt.Fprintf(w, "audit annotations: %s\n", labels(r.AuditAnnotations))
	}
	return nil
}

// printObject prints the object after the mutations, when they changed it.
func printObject(w io.Writer, object json.RawMessage) error {
	if len(object) == 0 {
		return nil
	}
	var obj bytes.Buffer
	if err := json.Indent(&obj, object, "", "  "); err != nil {
		return fmt.Errorf("the server's answer: object: %w", err)
	}
	fmt.Fprintf(w, "object after the mutations:\n%s\n", obj.Bytes())
	return nil
}

func printVersion(w io.Writer, res apiv1.EvaluateResponse) {
	fmt.Fprintf(w, "\npolicy version %d", res.SnapshotVersion)
	if res.Candidate {
		fmt.Fprint(w, ", with the candidate objects")
	}
	fmt.Fprintln(w)
}

// printTrace prints a webhook's trace: a table of the bindings, then each
// binding's expressions and mutations.
func printTrace(w io.Writer, trace []apiv1.BindingTrace) error {
	t := newTable(w, "POLICY", "BINDING", "PARAM", "MATCHED", "OUTCOME", "COST", "REASON")
	for _, b := range trace {
		outcome := b.Outcome
		if b.Reinvoked {
			outcome += ", reinvoked"
		}
		t.row(b.Policy, b.Binding, b.Param, fmt.Sprint(b.Matched), outcome, fmt.Sprint(b.Cost), b.Reason)
	}
	if err := t.flush(); err != nil {
		return err
	}
	for _, b := range trace {
		if len(b.MatchConditions)+len(b.Validations)+len(b.AuditAnnotations)+len(b.Mutations) == 0 {
			continue
		}
		fmt.Fprintf(w, "\n%s (binding %s", b.Policy, b.Binding)
		if b.Param != "" {
			fmt.Fprintf(w, ", param %s", b.Param)
		}
		if b.Reinvoked {
			fmt.Fprint(w, ", reinvoked")
		}
		fmt.Fprintln(w, "):")
		for _, g := range []struct {
			what  string
			exprs []apiv1.ExpressionTrace
		}{{"matchCondition", b.MatchConditions}, {"validation", b.Validations}, {"auditAnnotation", b.AuditAnnotations}} {
			for i, x := range g.exprs {
				name := x.Name
				if name == "" {
					name = fmt.Sprint(i)
				}
				fmt.Fprintf(w, "  %s %s: %s\n", g.what, name, x.Expression)
				result := x.Result
				if x.Error != "" {
					result = "error: " + x.Error
				}
				fmt.Fprintf(w, "    = %s (cost %d)", result, x.Cost)
				if x.Message != "" {
					fmt.Fprintf(w, ": %s", x.Message)
				}
				fmt.Fprintln(w)
			}
		}
		printMutations(w, b.Mutations)
	}
	return nil
}

// printMutations shows what each applied mutation did.
func printMutations(w io.Writer, ms []apiv1.MutationTrace) {
	for _, m := range ms {
		fmt.Fprintf(w, "  mutation %d (%s): %s\n", m.Index, m.PatchType, strings.TrimSpace(m.Expression))
		result := "unchanged"
		switch {
		case m.Error != "":
			result = "error: " + m.Error
		case m.Changed:
			result = "changed the object"
		}
		fmt.Fprintf(w, "    = %s (cost %d)\n", result, m.Cost)
	}
}
