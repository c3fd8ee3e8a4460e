package catalog

import (
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/google/cel-go/cel"
	plugincel "k8s.io/apiserver/pkg/admission/plugin/cel"
	"k8s.io/apiserver/pkg/cel/environment"

	"github.com/portcullis-dev/portcullis/internal/catalog"
	"github.com/portcullis-dev/portcullis/internal/evaluator"
	"github.com/portcullis-dev/portcullis/internal/evaluator/fastcel"
)

// fastEnv serves the fast interpreter one decoded object and a policy's
// variables, themselves evaluated by the interpreter (as the evaluator's
// own frame does).
type fastEnv struct {
	object any
	params any
	vars   map[string]*fastcel.Program
	memo   map[string]any
	stack  fastcel.Stack
}

func (e *fastEnv) Stack() *fastcel.Stack { return &e.stack }
func (e *fastEnv) Object() any           { return e.object }
func (e *fastEnv) OldObject() any        { return nil }
func (e *fastEnv) Params() (any, bool)   { return e.params, true }
func (e *fastEnv) Cancelled() bool       { return false }
func (e *fastEnv) Variable(name string) (any, bool) {
	if v, ok := e.memo[name]; ok {
		return v, true
	}
	p := e.vars[name]
	if p == nil {
		return nil, false
	}
	v, _, ok := p.Eval(e)
	if ok {
		e.memo[name] = v
	}
	return v, ok
}

// variable is a policy's variable as the composited compiler reads it.
type variable struct{ name, expression string }

func (v variable) GetName() string          { return v.name }
func (v variable) GetExpression() string    { return v.expression }
func (v variable) ReturnTypes() []*cel.Type { return []*cel.Type{cel.AnyType, cel.DynType} }

// fastShare measures how much of a set of policies the fast interpreter
// takes: the share of expressions it compiles, and the share of the
// evaluations of variables and validations on the objects that it answers
// without declining to cel-go.
type fastShare struct {
	exprs, compiled, evals, answered int
	declined                         map[string]int
}

func measureFast(t *testing.T, objs evaluator.Objects, objects []map[string]any, params any) fastShare {
	t.Helper()
	fs := fastShare{declined: map[string]int{}}
	for _, pol := range objs.Policies {
		// The interpreter compiles an expression checked as the plugin
		// checks it: in the policy's composited environment, with the
		// variables declared before it.
		fc, err := plugincel.NewCompositedCompiler(environment.MustBaseEnvSet(environment.DefaultCompatibilityVersion()))
		if err != nil {
			t.Fatal(err)
		}
		compile := func(text string) *fastcel.Program {
			fs.exprs++
			base, err := fc.Env(environment.StoredExpressions)
			if err != nil {
				t.Fatal(err)
			}
			env, err := fastcel.CheckEnv(base)
			if err != nil {
				t.Fatal(err)
			}
			p := fastcel.Compile(env, text)
			if p != nil {
				fs.compiled++
			} else {
				t.Logf("no fast program for %q", text)
			}
			return p
		}
		vars := map[string]*fastcel.Program{}
		var order []string
		for _, v := range pol.Spec.Variables {
			vars[v.Name] = compile(v.Expression)
			order = append(order, v.Name)
			fc.CompileAndStoreVariable(variable{v.Name, v.Expression},
				plugincel.OptionalVariableDeclarations{HasParams: pol.Spec.ParamKind != nil}, environment.StoredExpressions)
		}
		var checks []*fastcel.Program
		var texts []string
		for _, v := range pol.Spec.Validations {
			checks = append(checks, compile(v.Expression))
			texts = append(texts, v.Expression)
			if v.MessageExpression != "" {
				compile(v.MessageExpression)
			}
		}
		for _, c := range pol.Spec.MatchConditions {
			compile(c.Expression)
		}
		for _, o := range objects {
			e := &fastEnv{object: o, params: params, vars: vars, memo: map[string]any{}}
			for _, name := range order {
				fs.evals++
				if _, ok := e.Variable(name); ok {
					fs.answered++
				} else {
					fs.declined[pol.Name+": variables."+name]++
				}
			}
			for i, p := range checks {
				fs.evals++
				if p == nil {
					fs.declined[pol.Name+": "+texts[i]]++
					continue
				}
				if _, _, ok := p.Eval(e); ok {
					fs.answered++
				} else {
					fs.declined[pol.Name+": "+texts[i]]++
				}
			}
		}
	}
	return fs
}

// TestPodSecurityTakesTheFastPath measures the share of the Pod Security
// entries' expressions the fast interpreter takes on generated objects:
// every expression compiles for it, and on objects an API server accepts
// it answers every evaluation (the annotations check, a map to iterate, is
// allowed to decline, as it did before all() over a map was taken). It
// declines, and cel-go answers, on a null containers list, which only a
// request the API server would refuse can hold.
func TestPodSecurityTakesTheFastPath(t *testing.T) {
	for _, name := range []string{"pod-security-baseline", "pod-security-restricted"} {
		_, objs := snapshot(t, name)
		var annotationsCheck string
		for _, v := range objs.Policies[0].Spec.Validations {
			if strings.Contains(v.Expression, "annotations.all(") {
				annotationsCheck = name + ": " + v.Expression
			}
		}
		g := gen{rand.New(rand.NewPCG(7, 7))}
		var plain, annotated, nullList []map[string]any
		for range 2000 {
			k := kinds[g.pick(len(kinds))]
			p := g.pod()
			o := request(t, k, p).Object
			switch {
			case p.spec.Containers == nil:
				nullList = append(nullList, o)
			case len(p.meta.Annotations) > 0:
				annotated = append(annotated, o)
			default:
				plain = append(plain, o)
			}
		}
		all := measureFast(t, objs, append(append(append([]map[string]any{}, plain...), annotated...), nullList...), nil)
		if all.compiled != all.exprs {
			t.Errorf("%s: %d of %d expressions have a fast program", name, all.compiled, all.exprs)
		}
		t.Logf("%s: %d of %d expressions compile for the fast interpreter; it answered %d of %d evaluations of variables and validations (%.1f%%) on %d objects (%d with a null containers list, %d with annotations)",
			name, all.compiled, all.exprs, all.answered, all.evals, 100*float64(all.answered)/float64(all.evals), len(plain)+len(annotated)+len(nullList), len(nullList), len(annotated))
		for what, n := range measureFast(t, objs, plain, nil).declined {
			t.Errorf("%s: the fast interpreter declined %s on %d plain objects", name, what, n)
		}
		for what, n := range measureFast(t, objs, annotated, nil).declined {
			if what != annotationsCheck {
				t.Errorf("%s: the fast interpreter declined %s on %d objects with annotations", name, what, n)
			}
		}
	}
}

// TestCatalogFastShare measures the fast interpreter's share of every
// catalog entry: its expressions that compile for it, and its answers on
// generated objects (the pod policies on Pods and workloads, the others on
// objects of their kinds). Only the list params read with split, which
// the interpreter does not take, are left to cel-go.
func TestCatalogFastShare(t *testing.T) {
	g := gen{rand.New(rand.NewPCG(9, 9))}
	var pods []map[string]any
	for range 500 {
		p := g.pod()
		if p.spec.Containers == nil {
			continue
		}
		p.meta.Annotations = nil
		pods = append(pods, request(t, kinds[g.pick(len(kinds))], p).Object)
	}
	others := map[string][]map[string]any{
		"max-replicas":               {decode(t, `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"d"},"spec":{"replicas":3}}`), decode(t, `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"d"},"spec":{}}`)},
		"disallow-nodeport-services": {decode(t, `{"apiVersion":"v1","kind":"Service","metadata":{"name":"s"},"spec":{"type":"NodePort"}}`), decode(t, `{"apiVersion":"v1","kind":"Service","metadata":{"name":"s"},"spec":{}}`)},
		"restrict-ingress-classes":   {decode(t, `{"apiVersion":"networking.k8s.io/v1","kind":"Ingress","metadata":{"name":"i"},"spec":{"ingressClassName":"nginx"}}`), decode(t, `{"apiVersion":"networking.k8s.io/v1","kind":"Ingress","metadata":{"name":"i","annotations":{"kubernetes.io/ingress.class":"x"}},"spec":{}}`)},
	}
	var total fastShare
	for _, e := range catalog.List() {
		_, objs := snapshot(t, e.Name)
		var params any
		if len(objs.Params) > 0 {
			params = objs.Params[0].Object
		}
		objects := others[e.Name]
		if objects == nil {
			objects = pods
		}
		fs := measureFast(t, objs, objects, params)
		total.exprs += fs.exprs
		total.compiled += fs.compiled
		total.evals += fs.evals
		total.answered += fs.answered
		t.Logf("%-36s %2d/%2d expressions compile, %5.1f%% of %d evaluations answered", e.Name, fs.compiled, fs.exprs, 100*float64(fs.answered)/float64(fs.evals), fs.evals)
		for what := range fs.declined {
			if !strings.Contains(string(e.YAML), "split(") {
				t.Errorf("%s: the fast interpreter declined %s", e.Name, what)
			}
		}
	}
	t.Logf("catalog: %d of %d expressions (%.1f%%) compile for the fast interpreter; it answered %.1f%% of %d evaluations",
		total.compiled, total.exprs, 100*float64(total.compiled)/float64(total.exprs), 100*float64(total.answered)/float64(total.evals), total.evals)
}

func decode(t *testing.T, js string) map[string]any {
	t.Helper()
	o, err := evaluator.DecodeObject([]byte(js))
	if err != nil {
		t.Fatal(err)
	}
	return o
}
