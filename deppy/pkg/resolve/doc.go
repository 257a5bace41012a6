// Package resolve is a small, explainable front end to the SAT solver of
// github.com/operator-framework/deppy (gini underneath).
//
// A problem is a set of Variables, each carrying Constraints (mandatory,
// prohibited, dependency, conflict, atMost, or). Variables are produced by
// VariableSources that run in order as a Pipeline: every stage sees the
// variables the earlier stages produced and may add new ones, refine existing
// ones (add constraints) or drop them. A Resolver runs a pipeline and solves.
//
// When there is no solution, Solve returns a *NotSatisfiableError: the
// constraints that together make the problem unsolvable (a core found by the
// solver), each with a human-readable message, plus an optional summary
// written by an Explainer that understands the domain (see package olm).
//
// The package is pure: no I/O, no clocks, no globals; it is safe to call from
// several goroutines as long as they do not share a Variables value.
package resolve
