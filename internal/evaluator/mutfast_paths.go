package evaluator

import (
	celast "github.com/google/cel-go/common/ast"
	"github.com/google/cel-go/common/operators"
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/cel/common"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"

	"github.com/portcullis-dev/portcullis/internal/evaluator/objpatch"
)

// The typed CEL view of an object is its Go struct, and decoding a whole
// Pod into one costs more than the rest of a mutation. An expression can
// only observe the fields it selects, so the fast path decodes only those:
// the fields a policy's expressions read of object and oldObject are
// found once, at compile time, from their syntax (readPaths), and the
// typed view a policy's frames see is the struct decoded from the
// canonical JSON cut to them (objpatch.KeepPaths). Any use of object it
// cannot follow (the whole object compared, passed to a function, indexed
// by a computed key, a shadowing comprehension variable) reads the whole
// object.

// typedPaths are what a policy's expressions read of its objects.
type typedPaths struct{ object, oldObject objpatch.FieldPaths }

// readPaths adds the paths of object and oldObject that an expression
// reads.
func (tp *typedPaths) readPaths(text string) {
	a, iss := parseEnv.Parse(text)
	if iss != nil && iss.Err() != nil {
		tp.object.Add(nil)
		tp.oldObject.Add(nil)
		return
	}
	tp.visit(a.NativeRep().Expr())
}

func (tp *typedPaths) visit(e celast.Expr) {
	if root, path, ok := objectPath(e); ok {
		tp.pathsOf(root).Add(path)
		return
	}
	switch e.Kind() {
	case celast.SelectKind:
		tp.visit(e.AsSelect().Operand())
	case celast.CallKind:
		c := e.AsCall()
		if c.IsMemberFunction() {
			tp.visit(c.Target())
		}
		for _, arg := range c.Args() {
			tp.visit(arg)
		}
	case celast.ListKind:
		for _, el := range e.AsList().Elements() {
			tp.visit(el)
		}
	case celast.MapKind:
		for _, en := range e.AsMap().Entries() {
			me := en.AsMapEntry()
			tp.visit(me.Key())
			tp.visit(me.Value())
		}
	case celast.StructKind:
		for _, f := range e.AsStruct().Fields() {
			tp.visit(f.AsStructField().Value())
		}
	case celast.ComprehensionKind:
		c := e.AsComprehension()
		for _, v := range []string{c.IterVar(), c.IterVar2(), c.AccuVar()} {
			if t := tp.pathsOf(v); t != nil {
				// A variable that shadows object: what it reads
				// cannot be told from object's.
				t.Add(nil)
			}
		}
		for _, sub := range []celast.Expr{c.IterRange(), c.AccuInit(), c.LoopCondition(), c.LoopStep(), c.Result()} {
			tp.visit(sub)
		}
	}
}

func (tp *typedPaths) pathsOf(name string) *objpatch.FieldPaths {
	switch name {
	case "object":
		return &tp.object
	case "oldObject":
		return &tp.oldObject
	}
	return nil
}

// objectPath is the field path e selects of object or oldObject: through
// selections, has() tests, optional selections and indexes by a string
// literal.
func objectPath(e celast.Expr) (root string, path []string, ok bool) {
	switch e.Kind() {
	case celast.IdentKind:
		name := e.AsIdent()
		return name, nil, name == "object" || name == "oldObject"
	case celast.SelectKind:
		s := e.AsSelect()
		root, path, ok = objectPath(s.Operand())
		return root, append(path, s.FieldName()), ok
	case celast.CallKind:
		c := e.AsCall()
		if c.IsMemberFunction() || len(c.Args()) != 2 {
			return "", nil, false
		}
		if fn := c.FunctionName(); fn != operators.Index && fn != operators.OptSelect && fn != operators.OptIndex {
			return "", nil, false
		}
		key := c.Args()[1]
		if key.Kind() != celast.LiteralKind {
			return "", nil, false
		}
		s, isStr := key.AsLiteral().(types.String)
		if !isStr {
			return "", nil, false
		}
		root, path, ok = objectPath(c.Args()[0])
		return root, append(path, string(s)), ok
	}
	return "", nil, false
}

// typedValue is the typed view of the object for expressions that read
// t's paths of it (nil: all of it), decoded once per path set.
func (l *lazyTyped) typedValue(t *objpatch.FieldPaths) ref.Val {
	if t == nil {
		return l.value()
	}
	for _, pv := range l.pruned {
		if pv.t == t {
			return pv.v
		}
	}
	m, ok := objpatch.KeepPaths(l.u.Object, t, l.kind.Kind)
	if !ok {
		return l.value()
	}
	v := l.decode(m)
	l.pruned = append(l.pruned, prunedView{t: t, v: v})
	return v
}

type prunedView struct {
	t *objpatch.FieldPaths
	v ref.Val
}

func (l *lazyTyped) decode(m map[string]any) ref.Val {
	typed, err := clientgoscheme.Scheme.New(l.kind.Kind)
	if err == nil {
		err = runtime.DefaultUnstructuredConverter.FromUnstructured(m, typed)
	}
	if err != nil {
		// The canonical form always decodes; if it did not, the exact
		// path says what the plugin says.
		l.st.declined = true
		return types.WrapErr(errFastDecline)
	}
	return common.SchemalessTypedToVal(typed)
}
