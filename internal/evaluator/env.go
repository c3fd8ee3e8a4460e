package evaluator

import (
	"strings"
	"sync"

	celgo "github.com/google/cel-go/cel"
	celast "github.com/google/cel-go/common/ast"
	"k8s.io/apiserver/pkg/cel/environment"
)

var (
	baseEnvOnce sync.Once
	baseEnvSet  *environment.EnvSet
	parseEnv    *celgo.Env
)

// compositionEnvTemplate is the environment the apiserver's plugin compiles
// every policy with (plugin.go getCompositionEnvTemplateWithStrictCost).
func compositionEnvTemplate() *environment.EnvSet {
	baseEnvOnce.Do(func() {
		baseEnvSet = environment.MustBaseEnvSet(environment.DefaultCompatibilityVersion())
		parseEnv = baseEnvSet.StoredExpressionsEnv()
	})
	return baseEnvSet
}

const errAuthorizerUnsupported = "compilation failed: authorizer and authorizer.requestResource are not supported: " +
	"Portcullis evaluates policies outside the cluster, where authorization checks cannot run"

// analyse reports whether an expression refers to the authorizer, and
// whether it uses namespaceObject for anything but metadata.name.
func analyse(text string) (usesAuthorizer, needsNamespace bool) {
	a, iss := parseEnv.Parse(text)
	if iss != nil && iss.Err() != nil {
		return false, strings.Contains(text, "namespaceObject")
	}
	nameOnly := map[int64]bool{}
	var nsIdents []int64
	celast.PreOrderVisit(a.NativeRep().Expr(), celast.NewExprVisitor(func(e celast.Expr) {
		switch e.Kind() {
		case celast.IdentKind:
			switch e.AsIdent() {
			case "authorizer":
				usesAuthorizer = true
			case "namespaceObject":
				nsIdents = append(nsIdents, e.ID())
			}
		case celast.SelectKind:
			sel := e.AsSelect()
			if sel.FieldName() != "name" || sel.Operand().Kind() != celast.SelectKind {
				return
			}
			inner := sel.Operand().AsSelect()
			if inner.FieldName() == "metadata" && !inner.IsTestOnly() && inner.Operand().Kind() == celast.IdentKind &&
				inner.Operand().AsIdent() == "namespaceObject" {
				nameOnly[inner.Operand().ID()] = true
			}
		}
	}))
	for _, id := range nsIdents {
		if !nameOnly[id] {
			needsNamespace = true
		}
	}
	return usesAuthorizer, needsNamespace
}
