package olm

import (
	"fmt"
	"sort"
	"strings"
)

// Dependency cycles: catalogs may declare packages that need each other (a requires b, b requires
// a; three packages in a ring; a bundle requiring its own package). Resolution itself is not
// troubled by them: the bundle-dependencies stage visits every bundle once and the SAT solver
// takes the cycle as plain clauses. What a cycle does make hard is reading an explanation: the
// sentence about the one requirement that fails names two packages, and the chain that leads
// back to the first package is lost among the conflicting constraints. explainCycles adds one
// sentence per cycle found among the conflicting constraints, naming its packages in order.
//
// The walk is over a graph that may be cyclic by construction, so it is iterative and marks
// every node it visits: its cost is linear in the number of conflicting dependencies.

// maxCycleNames bounds how many packages a cycle sentence names.
const maxCycleNames = 10

// packageGraph is a directed graph of packages: an edge p → q says a bundle of p requires
// something that (a bundle of) q provides.
type packageGraph struct {
	names []string
	index map[string]int
	edges [][]int
	seen  map[[2]int]bool
}

func (g *packageGraph) node(name string) int {
	if i, ok := g.index[name]; ok {
		return i
	}
	g.index[name] = len(g.names)
	g.names = append(g.names, name)
	g.edges = append(g.edges, nil)
	return len(g.names) - 1
}

func (g *packageGraph) edge(from, to string) {
	f, t := g.node(from), g.node(to)
	if g.seen[[2]int{f, t}] {
		return
	}
	g.seen[[2]int{f, t}] = true
	g.edges[f] = append(g.edges[f], t)
}

// dependencyGraph builds the package graph of the dependencies among reasons. A dependency that
// its own bundle satisfies (a bundle providing the API it requires) cannot be part of a conflict
// and adds no edge. A package dependency with no candidates still adds its edge: "c requires a
// in a range nothing matches" is the link that closes an unsatisfiable cycle.
func dependencyGraph(reasons []*Reason) *packageGraph {
	g := &packageGraph{index: map[string]int{}, seen: map[[2]int]bool{}}
	for _, r := range reasons {
		switch r.Kind {
		case ReasonPackageDependency, ReasonGVKDependency, ReasonConstraintDependency:
		default:
			continue
		}
		if r.From == nil || containsBundle(r.Candidates, r.From) {
			continue
		}
		g.node(r.From.Package)
		if r.Kind == ReasonPackageDependency {
			g.edge(r.From.Package, r.Package)
		}
		if r.Kind == ReasonConstraintDependency && r.Constraint != nil && r.Constraint.Package != nil {
			g.edge(r.From.Package, r.Constraint.Package.PackageName)
		}
		for _, b := range r.Candidates {
			g.edge(r.From.Package, b.Package)
		}
	}
	return g
}

func containsBundle(bs []*Bundle, b *Bundle) bool {
	for _, x := range bs {
		if x == b {
			return true
		}
	}
	return false
}

// cycles is what explainCycles found: a sentence per cycle and, per package in a cycle, the
// number of its cycle.
type cycles struct {
	sentences []string
	of        map[string]int
}

// sameCycle reports whether every package of chain is in one cycle.
func (c cycles) sameCycle(chain []string) bool {
	n, ok := c.of[chain[0]]
	for _, p := range chain[1:] {
		m, in := c.of[p]
		ok = ok && in && m == n
	}
	return ok
}

// explainCycles returns one sentence per dependency cycle among reasons, e.g.
//
//	packages "a", "b" and "c" depend on each other in a cycle: "a" → "b" → "c" → "a"
func explainCycles(reasons []*Reason) cycles {
	g := dependencyGraph(reasons)
	found := cycles{of: map[string]int{}}
	for _, comp := range g.cyclicComponents() {
		names := make([]string, len(comp))
		for i, n := range comp {
			names[i] = g.names[n]
			found.of[g.names[n]] = len(found.sentences)
		}
		path := g.shortestCycle(comp)
		switch {
		case len(comp) == 1:
			found.sentences = append(found.sentences, fmt.Sprintf("package %q depends on itself", names[0]))
		case len(path)-1 == len(comp):
			found.sentences = append(found.sentences, fmt.Sprintf("packages %s depend on each other in a cycle: %s", quotedList(names), g.renderPath(path)))
		default:
			found.sentences = append(found.sentences, fmt.Sprintf("packages %s depend on each other in cycles, e.g. %s", quotedList(names), g.renderPath(path)))
		}
	}
	return found
}

// cyclicComponents returns the strongly connected components of g that hold a cycle (several
// packages, or one that depends on itself), each sorted by the order in which its packages
// were added to g.
func (g *packageGraph) cyclicComponents() [][]int {
	var out [][]int
	for _, comp := range g.components() {
		if len(comp) == 1 && !g.seen[[2]int{comp[0], comp[0]}] {
			continue
		}
		sort.Ints(comp)
		out = append(out, comp)
	}
	return out
}

// components returns the strongly connected components of g (Tarjan's algorithm, written with an
// explicit stack so that a long chain of packages cannot exhaust the goroutine's stack).
func (g *packageGraph) components() [][]int {
	n := len(g.names)
	order := make([]int, n) // 0: not visited yet; otherwise the visit number
	low := make([]int, n)
	onStack := make([]bool, n)
	var stack []int
	var comps [][]int
	visits := 0
	type frame struct{ v, next int }
	for root := 0; root < n; root++ {
		if order[root] != 0 {
			continue
		}
		visits++
		order[root], low[root] = visits, visits
		stack = append(stack, root)
		onStack[root] = true
		call := []frame{{v: root}}
		for len(call) > 0 {
			top := len(call) - 1
			v := call[top].v
			if call[top].next < len(g.edges[v]) {
				w := g.edges[v][call[top].next]
				call[top].next++
				switch {
				case order[w] == 0:
					visits++
					order[w], low[w] = visits, visits
					stack = append(stack, w)
					onStack[w] = true
					call = append(call, frame{v: w})
				case onStack[w] && order[w] < low[v]:
					low[v] = order[w]
				}
				continue
			}
			call = call[:top]
			if top > 0 {
				if p := call[top-1].v; low[v] < low[p] {
					low[p] = low[v]
				}
			}
			if low[v] != order[v] {
				continue
			}
			var comp []int
			for {
				w := stack[len(stack)-1]
				stack = stack[:len(stack)-1]
				onStack[w] = false
				comp = append(comp, w)
				if w == v {
					break
				}
			}
			comps = append(comps, comp)
		}
	}
	sort.Slice(comps, func(i, j int) bool { return minInt(comps[i]) < minInt(comps[j]) })
	return comps
}

// shortestCycle returns a shortest cycle through the first node of comp (a sorted strongly
// connected component with a cycle), as a path that starts and ends with that node.
func (g *packageGraph) shortestCycle(comp []int) []int {
	start := comp[0]
	member := make(map[int]bool, len(comp))
	for _, n := range comp {
		member[n] = true
	}
	parent := map[int]int{start: -1}
	queue := []int{start}
	for len(queue) > 0 {
		u := queue[0]
		queue = queue[1:]
		for _, w := range g.edges[u] {
			if w == start {
				var rev []int
				for x := u; x != -1; x = parent[x] {
					rev = append(rev, x)
				}
				path := make([]int, 0, len(rev)+1)
				for i := len(rev) - 1; i >= 0; i-- {
					path = append(path, rev[i])
				}
				return append(path, start)
			}
			if _, visited := parent[w]; visited || !member[w] {
				continue
			}
			parent[w] = u
			queue = append(queue, w)
		}
	}
	return []int{start, start} // not reached for a component with a cycle
}

// renderPath writes `"a" → "b" → "a"`, eliding the middle of a long cycle.
func (g *packageGraph) renderPath(path []int) string {
	names := make([]string, len(path))
	for i, n := range path {
		names[i] = g.names[n]
	}
	return renderChain(names)
}

// renderChain writes `"a" → "b" → "c"`, naming at most maxCycleNames+1 packages: a longer chain
// keeps its beginning and its last two links.
func renderChain(names []string) string {
	parts := make([]string, 0, maxCycleNames+2)
	for i, n := range names {
		if len(names) > maxCycleNames+1 && i == maxCycleNames-1 {
			parts = append(parts, fmt.Sprintf("… (%d more)", len(names)-maxCycleNames-1),
				fmt.Sprintf("%q", names[len(names)-2]), fmt.Sprintf("%q", names[len(names)-1]))
			break
		}
		parts = append(parts, fmt.Sprintf("%q", n))
	}
	return strings.Join(parts, " → ")
}

// dependencyChains returns, for every bundle reached through the dependencies among reasons, a
// shortest chain of packages leading to it from a requirement or an installed package (a
// breadth-first walk that visits each bundle once, so cycles end it). Bundles that are
// themselves candidates of a requirement have no entry.
func dependencyChains(reasons []*Reason) map[*Bundle][]string {
	next := map[*Bundle][]*Bundle{}
	var queue []*Bundle
	parent := map[*Bundle]*Bundle{}
	for _, r := range reasons {
		switch r.Kind {
		case ReasonRequired, ReasonInstalled:
			for _, b := range r.Candidates {
				if _, seen := parent[b]; !seen {
					parent[b] = nil
					queue = append(queue, b)
				}
			}
			if r.Installed != nil {
				for _, b := range r.Installed.Allowed {
					if _, seen := parent[b]; !seen {
						parent[b] = nil
						queue = append(queue, b)
					}
				}
			}
		case ReasonPackageDependency, ReasonGVKDependency, ReasonConstraintDependency:
			if r.From != nil {
				next[r.From] = append(next[r.From], r.Candidates...)
			}
		}
	}
	for len(queue) > 0 {
		b := queue[0]
		queue = queue[1:]
		for _, c := range next[b] {
			if _, seen := parent[c]; seen {
				continue
			}
			parent[c] = b
			queue = append(queue, c)
		}
	}
	chains := map[*Bundle][]string{}
	for b, p := range parent {
		if p == nil {
			continue
		}
		var rev []string
		for x := b; x != nil; x = parent[x] {
			rev = append(rev, x.Package)
		}
		chain := make([]string, len(rev))
		for i := range rev {
			chain[i] = rev[len(rev)-1-i]
		}
		chains[b] = chain
	}
	return chains
}

// quotedList writes `"a", "b" and "c"`, naming at most maxCycleNames.
func quotedList(names []string) string {
	q := quoteAll(names)
	if len(q) > maxCycleNames {
		q = append(q[:maxCycleNames], fmt.Sprintf("%d more", len(names)-maxCycleNames))
	}
	if len(q) == 1 {
		return q[0]
	}
	return strings.Join(q[:len(q)-1], ", ") + " and " + q[len(q)-1]
}

func minInt(xs []int) int {
	m := xs[0]
	for _, x := range xs[1:] {
		if x < m {
			m = x
		}
	}
	return m
}
