package evaluator

import (
	"sync"

	"github.com/google/cel-go/cel"

	plugincel "k8s.io/apiserver/pkg/admission/plugin/cel"
	apiservercel "k8s.io/apiserver/pkg/cel"
	"k8s.io/apiserver/pkg/cel/environment"

	"github.com/portcullis-dev/portcullis/internal/evaluator/fastcel"
)

// The plugin builds a fresh CompositedCompiler for every policy
// (plugincel.NewCompositedCompiler): eight extended environment sets, which
// is most of a policy's compile time and, since programs keep their
// environment alive, most of its heap. A CompositedCompiler's only
// per-policy state is the "kubernetes.variables" declaration, whose fields
// CompileAndStoreVariable adds one by one, and the map of compiled variables
// (read only by its CreateContext, which the evaluator does not use). So a
// compiler whose variables declaration has been emptied checks and plans
// every expression exactly as a fresh one does: field types are looked up in
// that declaration at check time and never cached, and programs do not read
// it at run time. Compilers are therefore pooled and reset before each
// policy. The differential test compares the result with the plugin.

// maxPooledVariableNames bounds the compiled variables a pooled compiler
// retains (its unexported map keeps the last result per name); a compiler
// that has seen more distinct names is dropped.
const maxPooledVariableNames = 256

const maxPooledCompilers = 8

const variablesTypeName = "kubernetes.variables"

type pooledCompiler struct {
	*plugincel.CompositedCompiler
	// varTypes are the "kubernetes.variables" declarations of the
	// compiler's environments (the same object in practice).
	varTypes []*apiservercel.DeclType
	names    map[string]struct{}
	unpooled bool
	// checkEnvs are fastcel.CheckEnv of the compiler's environments, by
	// mode, made on first use. They share the "variables" declaration.
	checkEnvs map[environment.Type]*cel.Env
}

var compilerPool struct {
	sync.Mutex
	free []*pooledCompiler
}

func getCompiler() (*pooledCompiler, error) {
	compilerPool.Lock()
	if n := len(compilerPool.free); n > 0 {
		c := compilerPool.free[n-1]
		compilerPool.free = compilerPool.free[:n-1]
		compilerPool.Unlock()
		return c, nil
	}
	compilerPool.Unlock()
	fc, err := plugincel.NewCompositedCompiler(compositionEnvTemplate())
	if err != nil {
		return nil, err
	}
	c := &pooledCompiler{CompositedCompiler: fc, names: map[string]struct{}{}}
	for _, mode := range []environment.Type{environment.NewExpressions, environment.StoredExpressions} {
		dt, ok := variablesDecl(fc, mode)
		if !ok {
			// Cannot be reset: use it for this policy only, as the
			// plugin would.
			c.unpooled = true
			break
		}
		c.varTypes = append(c.varTypes, dt)
	}
	return c, nil
}

func variablesDecl(fc *plugincel.CompositedCompiler, mode environment.Type) (*apiservercel.DeclType, bool) {
	env, err := fc.Env(mode)
	if err != nil {
		return nil, false
	}
	p, ok := env.CELTypeProvider().(*apiservercel.DeclTypeProvider)
	if !ok {
		return nil, false
	}
	dt, ok := p.FindDeclType(variablesTypeName)
	return dt, ok && dt.Fields != nil
}

// putCompiler empties the compiler's variables declaration, so that the
// next policy starts as with a fresh compiler, and returns it to the pool.
func putCompiler(c *pooledCompiler) {
	if c.unpooled || len(c.names) > maxPooledVariableNames {
		return
	}
	for _, dt := range c.varTypes {
		clear(dt.Fields)
	}
	compilerPool.Lock()
	if len(compilerPool.free) < maxPooledCompilers {
		compilerPool.free = append(compilerPool.free, c)
	}
	compilerPool.Unlock()
}

func (c *pooledCompiler) compileAndStoreVariable(v plugincel.NamedExpressionAccessor, opts plugincel.OptionalVariableDeclarations, mode environment.Type) plugincel.CompilationResult {
	c.names[v.GetName()] = struct{}{}
	return c.CompileAndStoreVariable(v, opts, mode)
}

// fastProgram compiles an expression for the fast interpreter, checked in
// the compiler's environment for mode as it is now, with the variables
// declared before the expression: the interpreter then calls the
// overloads the checker chose for cel-go's program (fastcel/overloads.go).
// It is nil when the interpreter declines the expression.
func (c *pooledCompiler) fastProgram(text string, mode environment.Type) *fastcel.Program {
	env := c.checkEnvs[mode]
	if env == nil {
		base, err := c.Env(mode)
		if err != nil {
			return nil
		}
		if env, err = fastcel.CheckEnv(base); err != nil {
			return nil
		}
		if c.checkEnvs == nil {
			c.checkEnvs = map[environment.Type]*cel.Env{}
		}
		c.checkEnvs[mode] = env
	}
	return fastcel.Compile(env, text)
}
