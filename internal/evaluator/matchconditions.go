package evaluator

import (
	"fmt"

	celtypes "github.com/google/cel-go/common/types"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	celconfig "k8s.io/apiserver/pkg/apis/cel"
)

// matchConditions mirrors the plugin's matcher: false when a condition is
// false or the invocation failed. An error denies under failurePolicy Fail
// and skips the invocation under Ignore.
func (d *dispatcher) matchConditions(inv *invocation) bool {
	cp := inv.policy
	if len(cp.matchConditions) == 0 {
		return true
	}
	f := failurePolicyOf(cp)
	trace := inv.trace.matchConditions()
	_, gvk := d.matched(inv)
	fr := d.newFrame(cp, inv.param, d.requestValue(d.req.RequestResource, gvk), celtypes.NullValue, trace)
	const usual = int64(celconfig.RuntimeCELCostBudgetMatchConditions)
	given := d.budget(usual)
	results, remaining, err := fr.forInput(cp.matchExprs, given)
	d.charge(usual, given, remaining)
	trace.matchConditions(cp.matchConditions)
	if err != nil {
		if f == admissionregistrationv1.Fail {
			inv.fail(CauseError, err.Error())
			return false
		} else if f == admissionregistrationv1.Ignore {
			inv.notMatched = true
			return false
		}
	}
	var errorList []error
	cause := CauseError
	for i, r := range results {
		if r.err != nil {
			errorList = append(errorList, r.err)
			if r.cause == CauseCompileError {
				cause = CauseCompileError
			}
		}
		if r.val == celtypes.False {
			inv.trace.skipped(fmt.Sprintf("matchCondition %q is false", cp.matchConditions[i].name))
			inv.notMatched = true
			return false
		}
	}
	if len(errorList) > 0 {
		if f == admissionregistrationv1.Fail {
			inv.fail(cause, utilerrors.NewAggregate(errorList).Error())
			return false
		} else if f == admissionregistrationv1.Ignore {
			inv.notMatched = true
			return false
		}
	}
	return true
}
