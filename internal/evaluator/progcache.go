package evaluator

import (
	"errors"
	"maps"
	"runtime"
	"slices"
	"strings"
	"sync"
	"weak"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/common/types/traits"
	"github.com/portcullis-dev/portcullis/internal/evaluator/fastcel"
	plugincel "k8s.io/apiserver/pkg/admission/plugin/cel"
	apiservercel "k8s.io/apiserver/pkg/cel"
	"k8s.io/apiserver/pkg/cel/environment"
)

// Programs are shared between policies and snapshots that compile the same
// expression in the same environment. Most of a cel.Program's heap is its
// own copy of the environment's function dispatcher (cel-go's newProgram),
// so identical policies in many tenants would otherwise each pay for it.
//
// A compile result depends only on the expression text, the environment
// (mode and optional variable declarations), the accessor's return types
// and the "variables" fields declared when it is compiled (the checker
// reads each field's CEL type); the key holds all of them. Programs are
// immutable and safe for concurrent use. Entries are held weakly: they live
// as long as some compiled policy refers to them.

type progKind uint8

const (
	kindVariable progKind = iota
	kindValidation
	kindMessage
	kindAudit
	kindMatchCondition
	kindJSONPatch
	kindApplyConfiguration
)

type progKey struct {
	text string
	mode environment.Type
	opts plugincel.OptionalVariableDeclarations
	kind progKind
	vars string
}

// progEntry is one shared compile result, without the accessor (which
// is set per policy).
//
// When the fast interpreter takes the expression, cel-go's program is not
// kept: most of a compiled policy's heap is its programs (38 KB per
// policy), and cel-go runs only where the fast interpreter declines,
// which for most expressions is never. The expression is compiled in full
// all the same, so every compile error and cost limit is found when the
// policy is written, exactly as before; the program is planned again on
// first use (lazy), from the same environment.
type progEntry struct {
	program    cel.Program // nil when deferred to lazy
	outputType *cel.Type
	err        *apiservercel.Error
	fast       *fastcel.Program // nil when the fast interpreter declines the expression
	lazy       *lazyProgram
}

// lazyProgram plans a deferred program once, on first use.
type lazyProgram struct {
	once    sync.Once
	rebuild func() (cel.Program, error)
	program cel.Program
	err     error
}

func (l *lazyProgram) get() (cel.Program, error) {
	l.once.Do(func() {
		l.program, l.err = l.rebuild()
		l.rebuild = nil
	})
	return l.program, l.err
}

var progCache struct {
	sync.Mutex
	m map[progKey]weak.Pointer[progEntry]
}

func (c *pooledCompiler) varsKey() string {
	if len(c.varTypes) == 0 {
		return ""
	}
	f := c.varTypes[0].Fields
	if len(f) == 0 {
		return ""
	}
	names := make([]string, 0, len(f))
	for n := range f {
		names = append(names, n)
	}
	slices.Sort(names)
	var b strings.Builder
	for _, n := range names {
		b.WriteString(n)
		b.WriteByte(0)
		b.WriteString(f[n].Type.CelType().String())
		b.WriteByte(1)
	}
	return b.String()
}

// compile compiles one expression as the plugin's compiler does (for
// variables, CompileAndStoreVariable), reusing the result of an identical
// earlier compile.
func (c *pooledCompiler) compile(kind progKind, acc plugincel.ExpressionAccessor, opts plugincel.OptionalVariableDeclarations, mode environment.Type) (plugincel.CompilationResult, *progEntry) {
	if c.unpooled {
		// Compiled for this policy alone: nothing to share or defer.
		fast := c.fastProgram(acc.GetExpression(), mode)
		res := c.compileUncached(kind, acc, opts, mode)
		if res.Error != nil {
			return res, nil
		}
		return res, &progEntry{program: res.Program, outputType: res.OutputType, fast: fast}
	}
	key := progKey{text: acc.GetExpression(), mode: mode, opts: opts, kind: kind, vars: c.varsKey()}
	progCache.Lock()
	var e *progEntry
	if wp, ok := progCache.m[key]; ok {
		e = wp.Value()
	}
	progCache.Unlock()
	if e != nil {
		res := plugincel.CompilationResult{Program: e.program, OutputType: e.outputType, ExpressionAccessor: acc}
		if e.err != nil {
			res.Error = e.err
		}
		if kind == kindVariable {
			// What CompileAndStoreVariable's AddField does.
			name := acc.(plugincel.NamedExpressionAccessor).GetName()
			c.names[name] = struct{}{}
			for _, dt := range c.varTypes {
				dt.Fields[name] = apiservercel.NewDeclField(name, convertCelTypeToDeclType(res.OutputType), true, nil, nil)
			}
		}
		return res, e
	}
	// Both the fast program and the rebuild of the deferred one see the
	// variables as the expression is checked with, before compiling it:
	// compiling a variable declares it (a variable redefined under its
	// own name that reads its earlier definition must see the earlier
	// type, not its own).
	rebuild := c.rebuilder(kind, acc, opts, mode)
	fast := c.fastProgram(acc.GetExpression(), mode)
	res := c.compileUncached(kind, acc, opts, mode)
	e = &progEntry{program: res.Program, outputType: res.OutputType, err: res.Error}
	if res.Error == nil {
		e.fast = fast
		if e.fast != nil && res.Program != nil {
			e.lazy = &lazyProgram{rebuild: rebuild}
			e.program, res.Program = nil, nil
		}
	}
	progCache.Lock()
	if progCache.m == nil {
		progCache.m = map[progKey]weak.Pointer[progEntry]{}
	}
	progCache.m[key] = weak.Make(e)
	progCache.Unlock()
	runtime.AddCleanup(e, func(k progKey) {
		progCache.Lock()
		if wp, ok := progCache.m[k]; ok && wp.Value() == nil {
			delete(progCache.m, k)
		}
		progCache.Unlock()
	}, key)
	return res, e
}

func (c *pooledCompiler) compileUncached(kind progKind, acc plugincel.ExpressionAccessor, opts plugincel.OptionalVariableDeclarations, mode environment.Type) plugincel.CompilationResult {
	if kind == kindVariable {
		return c.compileAndStoreVariable(acc.(plugincel.NamedExpressionAccessor), opts, mode)
	}
	return c.CompileCELExpression(acc, opts, mode)
}

// convertCelTypeToDeclType is plugincel's unexported function of the same
// name (k8s.io/apiserver v0.37.2 admission/plugin/cel/composition.go),
// which AddField applies to a variable's output type.
func convertCelTypeToDeclType(celType *cel.Type) *apiservercel.DeclType {
	if celType == nil {
		return apiservercel.DynType
	}
	switch celType {
	case cel.AnyType:
		return apiservercel.AnyType
	case cel.BoolType:
		return apiservercel.BoolType
	case cel.BytesType:
		return apiservercel.BytesType
	case cel.DoubleType:
		return apiservercel.DoubleType
	case cel.DurationType:
		return apiservercel.DurationType
	case cel.IntType:
		return apiservercel.IntType
	case cel.NullType:
		return apiservercel.NullType
	case cel.StringType:
		return apiservercel.StringType
	case cel.TimestampType:
		return apiservercel.TimestampType
	case cel.UintType:
		return apiservercel.UintType
	default:
		if celType.HasTrait(traits.ContainerType) && celType.HasTrait(traits.IndexerType) {
			parameters := celType.Parameters()
			switch len(parameters) {
			case 1:
				elemType := convertCelTypeToDeclType(parameters[0])
				return apiservercel.NewListType(elemType, -1)
			case 2:
				keyType := convertCelTypeToDeclType(parameters[0])
				valueType := convertCelTypeToDeclType(parameters[1])
				return apiservercel.NewMapType(keyType, valueType, -1)
			}
		}
		return apiservercel.DynType
	}
}

// rebuilder returns how to compile the expression again, later, exactly as
// now: a compiler from the pool whose variables declaration holds the
// fields this one holds at this moment (the variables declared before the
// expression), which is all the checker reads.
func (c *pooledCompiler) rebuilder(kind progKind, acc plugincel.ExpressionAccessor, opts plugincel.OptionalVariableDeclarations, mode environment.Type) func() (cel.Program, error) {
	var fields map[string]*apiservercel.DeclField
	if len(c.varTypes) > 0 {
		fields = maps.Clone(c.varTypes[0].Fields)
	}
	return func() (cel.Program, error) {
		nc, err := getCompiler()
		if err != nil {
			return nil, err
		}
		defer putCompiler(nc)
		if nc.unpooled {
			return nil, errors.New("no resettable compiler to plan the program with")
		}
		for _, dt := range nc.varTypes {
			maps.Copy(dt.Fields, fields)
		}
		res := nc.compileUncached(kind, acc, opts, mode)
		if res.Error != nil {
			return nil, res.Error
		}
		return res.Program, nil
	}
}

// keptPrograms counts the policy's expressions that hold a cel-go program
// (Stats.Programs).
func (cp *compiledPolicy) keptPrograms() int {
	n := 0
	count := func(ce *compiledExpr) {
		if ce != nil && ce.result.Program != nil {
			n++
		}
	}
	for i := range cp.variables {
		count(&cp.variables[i].expr)
	}
	for _, ce := range cp.matchExprs {
		count(ce)
	}
	if v := cp.validating; v != nil {
		for _, list := range [][]*compiledExpr{v.validationExprs, v.messageExprs, v.auditExprs} {
			for _, ce := range list {
				count(ce)
			}
		}
	}
	if m := cp.mutating; m != nil {
		for i := range m.mutations {
			count(m.mutations[i].expr)
		}
	}
	return n
}
