package evaluator

import (
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
type progEntry struct {
	program    cel.Program
	outputType *cel.Type
	err        *apiservercel.Error
	fast       *fastcel.Program // nil when the fast interpreter declines the expression
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
		return c.compileUncached(kind, acc, opts, mode), nil
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
	res := c.compileUncached(kind, acc, opts, mode)
	e = &progEntry{program: res.Program, outputType: res.OutputType, err: res.Error}
	if res.Error == nil {
		e.fast = fastcel.Compile(parseEnv, acc.GetExpression())
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
