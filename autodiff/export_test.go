package autodiff

import "github.com/peel-ml/peel/interp"

// Test hooks: the compiled graphs of composites' rules and the bound of
// their cache.

// CompiledGraph is a graph prepared for repeated evaluation
// (compiledGraph).
type CompiledGraph = compiledRule

// CompileGraph prepares g for repeated evaluation (compileGraph).
func CompileGraph(g *interp.Graph) *CompiledGraph { return compileRule(g) }

// GraphOf returns the graph c evaluates.
func GraphOf(c *CompiledGraph) *interp.Graph { return c.g }

// SetCompiledRulesMax bounds the cache of composites' compiled rules at
// n entries and returns a function restoring the bound.
func SetCompiledRulesMax(n int) (restore func()) {
	old := compiledRules.SetMax(n)
	return func() { compiledRules.SetMax(old) }
}

// CompiledRulesLen returns the number of compiled rules cached.
func CompiledRulesLen() int { return compiledRules.Len() }
