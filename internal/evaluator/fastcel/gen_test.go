package fastcel

import (
	"fmt"
	"math"
	"math/rand/v2"
)

// genObject makes a Pod-like object whose fields are sometimes missing,
// null or of an unexpected kind.
func genObject(r *rand.Rand) map[string]any {
	str := func() any {
		return []string{"", "web", "app", "team", "registry.example.com/web:1.2", "nginx:latest", "ghcr.io/example/x@sha256:ab",
			"NET_BIND_SERVICE", "SYS_ADMIN", "ünï-cödé", "a,b", "cpu", "memory"}[r.IntN(13)]
	}
	scalar := func() any {
		switch r.IntN(9) {
		case 0:
			return nil
		case 1:
			return r.IntN(2) == 0
		case 2:
			return int64(r.IntN(100) - 20)
		case 3:
			return float64(r.IntN(10)) / 4
		case 4:
			return int64(math.MaxInt64 - r.IntN(2))
		default:
			return str()
		}
	}
	maybe := func(m map[string]any, k string, v func() any) {
		switch r.IntN(6) {
		case 0: // missing
		case 1:
			m[k] = nil
		case 2:
			m[k] = scalar()
		default:
			m[k] = v()
		}
	}
	strList := func() any {
		l := make([]any, r.IntN(4))
		for i := range l {
			if r.IntN(8) == 0 {
				l[i] = scalar()
			} else {
				l[i] = str()
			}
		}
		return l
	}
	strMap := func() any {
		m := map[string]any{}
		for range r.IntN(4) {
			k := str().(string)
			if r.IntN(6) == 0 {
				m[k] = scalar()
			} else {
				m[k] = str()
			}
		}
		return m
	}
	container := func() any {
		c := map[string]any{}
		maybe(c, "name", str)
		maybe(c, "image", str)
		maybe(c, "securityContext", func() any {
			sc := map[string]any{}
			maybe(sc, "privileged", func() any { return r.IntN(2) == 0 })
			maybe(sc, "runAsNonRoot", func() any { return r.IntN(2) == 0 })
			maybe(sc, "capabilities", func() any {
				caps := map[string]any{}
				maybe(caps, "add", strList)
				return caps
			})
			return sc
		})
		maybe(c, "resources", func() any {
			res := map[string]any{}
			maybe(res, "limits", strMap)
			return res
		})
		maybe(c, "ports", func() any {
			l := make([]any, r.IntN(3))
			for i := range l {
				l[i] = map[string]any{"containerPort": int64(r.IntN(70000))}
			}
			return l
		})
		return c
	}
	containers := func() any {
		l := make([]any, r.IntN(4))
		for i := range l {
			l[i] = container()
		}
		return l
	}
	meta := map[string]any{}
	maybe(meta, "name", str)
	maybe(meta, "labels", strMap)
	spec := map[string]any{}
	maybe(spec, "replicas", func() any { return int64(r.IntN(80)) })
	maybe(spec, "hostNetwork", func() any { return r.IntN(2) == 0 })
	maybe(spec, "containers", containers)
	maybe(spec, "initContainers", containers)
	maybe(spec, "tags", strList)
	return map[string]any{"metadata": meta, "spec": spec, "kind": str(), "apiVersion": str()}
}

type genKind int

const (
	kindAny genKind = iota
	kindBool
	kindInt
	kindString
	kindList
)

// exprGen writes random CEL expressions over the generated objects. They
// need not type-check: those that do not compile are skipped.
type exprGen struct {
	r    *rand.Rand
	vars []string // comprehension variables in scope
	n    int
}

func (g *exprGen) pick(xs ...string) string { return xs[g.r.IntN(len(xs))] }

func (g *exprGen) path() string {
	if len(g.vars) > 0 && g.r.IntN(2) == 0 {
		v := g.vars[g.r.IntN(len(g.vars))]
		return v + g.pick("", ".name", ".image", ".?securityContext.?privileged", "[0]", ".?resources.?limits", ".securityContext.capabilities.add", "['cpu']")
	}
	return g.pick("object.metadata.name", "object.metadata.labels", "object.metadata.?labels", "object.spec.replicas",
		"object.spec.?replicas", "object.spec.containers", "object.spec.?initContainers", "object.spec.tags", "object.spec.hostNetwork",
		"object.spec.containers[0]", "object.spec.containers[0].image", "object.spec.?containers[?1]", "object.metadata.labels['app']",
		"object.metadata.?labels[?'team']", "object.kind", "object.spec.containers[0].?ports", "object",
		"params.spec.tags", "params.?metadata.?labels", "params.kind", "params.spec.?containers.orValue([])",
		"params.data.tags", "params.?data.?max", "params.metadata.name", "params")
}

func (g *exprGen) newVar() string {
	g.n++
	return fmt.Sprintf("x%d", g.n)
}

func (g *exprGen) comprehension(kind genKind, depth int) string {
	v := g.newVar()
	rng := g.pick("object.spec.containers", "object.spec.?initContainers.orValue([])", "object.spec.tags", "['app', 'team']",
		"object.spec.containers + object.spec.?initContainers.orValue([])")
	if g.r.IntN(3) == 0 {
		rng = g.expr(kindList, depth-1)
	}
	g.vars = append(g.vars, v)
	defer func() { g.vars = g.vars[:len(g.vars)-1] }()
	switch kind {
	case kindBool:
		if g.r.IntN(2) == 0 {
			// Over a map: the keys; the predicate often reads the value.
			m := g.pick("object.metadata.labels", "object.metadata.?annotations.orValue({})", "{'a': 1, 'web': 2}", "object.spec.nodeSelector")
			body := g.expr(kindBool, depth-1)
			if g.r.IntN(2) == 0 {
				body = fmt.Sprintf("(%s[%s] == %s || %s)", m, v, g.expr(kindAny, depth-1), body)
			}
			return fmt.Sprintf("%s.%s(%s, %s)", m, g.pick("all", "exists", "exists_one"), v, body)
		}
		return fmt.Sprintf("%s.%s(%s, %s)", rng, g.pick("all", "exists", "exists_one"), v, g.expr(kindBool, depth-1))
	default:
		if g.r.IntN(2) == 0 {
			return fmt.Sprintf("%s.filter(%s, %s)", rng, v, g.expr(kindBool, depth-1))
		}
		return fmt.Sprintf("%s.map(%s, %s)", rng, v, g.expr(kindAny, depth-1))
	}
}

func (g *exprGen) expr(kind genKind, depth int) string {
	if kind == kindAny {
		kind = []genKind{kindBool, kindInt, kindString, kindList}[g.r.IntN(4)]
		if g.r.IntN(4) == 0 {
			return g.path() + g.pick("", ".orValue(null)", ".hasValue()", ".value()")
		}
	}
	if depth <= 0 || g.r.IntN(5) == 0 {
		switch kind {
		case kindBool:
			return g.pick("true", "false", "has("+g.pick("object.spec.replicas", "object.metadata.labels", "object.spec.containers")+")", g.path())
		case kindInt:
			return g.pick("0", "1", "-3", "50", "9223372036854775807", g.path())
		case kindString:
			return g.pick("''", "'web'", "'app'", "':latest'", "'ü'", "', '", "'eb'", "'we'", "'nginx'", "'registry.'", "'50'", "'2.5'", "'true'", "'1e3'", g.path(),
				"object.kind", "object.apiVersion")
		default:
			return g.pick("[]", "['app', 'team']", "[1, 2.5, 'x', null]", g.path())
		}
	}
	d := depth - 1
	switch kind {
	case kindBool:
		switch g.r.IntN(16) {
		case 0:
			return "!" + g.expr(kindBool, d)
		case 1:
			return fmt.Sprintf("(%s %s %s)", g.expr(kindBool, d), g.pick("&&", "||"), g.expr(kindBool, d))
		case 2:
			k := []genKind{kindInt, kindString, kindBool, kindAny}[g.r.IntN(4)]
			return fmt.Sprintf("%s %s %s", g.expr(k, d), g.pick("==", "!="), g.expr(k, d))
		case 3:
			k := []genKind{kindInt, kindString}[g.r.IntN(2)]
			return fmt.Sprintf("%s %s %s", g.expr(k, d), g.pick("<", "<=", ">", ">="), g.expr(k, d))
		case 4:
			return fmt.Sprintf("%s.%s(%s)", g.expr(kindString, d), g.pick("startsWith", "endsWith", "contains"), g.expr(kindString, d))
		case 5:
			return fmt.Sprintf("%s.matches('%s')", g.expr(kindString, d), g.pick(":[^/:]+$", "^a", "b+", "(", "é"))
		case 6:
			return fmt.Sprintf("%s in %s", g.expr(kindString, d), g.pick(g.expr(kindList, d), "object.metadata.labels", "{'a': 1, 'web': 2}"))
		case 7:
			return fmt.Sprintf("(%s ? %s : %s)", g.expr(kindBool, d), g.expr(kindBool, d), g.expr(kindBool, d))
		case 8:
			return fmt.Sprintf("%s.?%s.orValue(%s)", g.path(), g.pick("privileged", "runAsNonRoot", "hostNetwork"), g.expr(kindBool, d))
		case 9:
			return fmt.Sprintf("matches(%s, 'a.c')", g.expr(kindString, d))
		case 10:
			return fmt.Sprintf("%s(%s) %s %s", g.pick("double", "int"), g.expr(g.pick2(kindInt, kindString), d), g.pick("==", "<", ">="), g.expr(kindInt, d))
		case 11:
			return fmt.Sprintf("bool(%s)", g.expr(g.pick2(kindAny, kindString), d))
		default:
			return g.comprehension(kindBool, depth)
		}
	case kindInt:
		switch g.r.IntN(6) {
		case 5:
			return fmt.Sprintf("%s(%s)", g.pick("int", "dyn"), g.expr(g.pick2(kindAny, kindString), d))
		case 0:
			return fmt.Sprintf("size(%s)", g.expr(kindAny, d))
		case 1:
			return fmt.Sprintf("%s.size()", g.expr(g.pick2(kindString, kindList), d))
		case 2:
			return fmt.Sprintf("(%s %s %s)", g.expr(kindInt, d), g.pick("+", "-", "*", "/", "%"), g.expr(kindInt, d))
		case 3:
			return "-" + g.expr(kindInt, d)
		default:
			return fmt.Sprintf("%s[%s]", g.expr(kindList, d), g.pick("0", "1", "-1"))
		}
	case kindString:
		switch g.r.IntN(5) {
		case 4:
			return fmt.Sprintf("string(%s)", g.expr(g.pick2(kindAny, kindInt), d))
		case 0:
			return fmt.Sprintf("%s + %s", g.expr(kindString, d), g.expr(kindString, d))
		case 1:
			return fmt.Sprintf("%s.join(%s)", g.expr(kindList, d), g.pick("", "', '", "'-'"))
		case 2:
			return fmt.Sprintf("%s.?%s.orValue(%s)", g.path(), g.pick("name", "image", "app"), g.expr(kindString, d))
		default:
			return fmt.Sprintf("(%s ? %s : %s)", g.expr(kindBool, d), g.expr(kindString, d), g.expr(kindString, d))
		}
	default:
		switch g.r.IntN(4) {
		case 0:
			return fmt.Sprintf("%s + %s", g.expr(kindList, d), g.expr(kindList, d))
		case 1:
			return fmt.Sprintf("[%s, %s]", g.expr(kindAny, d), g.expr(kindAny, d))
		case 2:
			return fmt.Sprintf("%s.orValue([])", g.pick("object.spec.?initContainers", "object.spec.?tags", "object.spec.?containers"))
		default:
			return g.comprehension(kindList, depth)
		}
	}
}

func (g *exprGen) pick2(a, b genKind) genKind {
	if g.r.IntN(2) == 0 {
		return a
	}
	return b
}
