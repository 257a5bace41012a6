package olm

import (
	"fmt"
	"strings"

	"github.com/olmv1/olmv1/deppy/pkg/resolve"
)

// Explainer returns the explainer the Resolver uses: it reads the Reasons of
// the conflicting constraints and writes one sentence per problem found, e.g.
//
//	package "b" 1.2.0 requires package "c" in range "1.3.0", but package "c" 1.4.0 is installed and may not be downgraded
//
// and, when the conflicting dependencies form a cycle (cycle.go), one more per cycle:
//
//	packages "a", "b" and "c" depend on each other in a cycle: "a" → "b" → "c" → "a"
func Explainer() resolve.Explainer { return resolve.ExplainerFunc(explain) }

func explain(causes []resolve.Cause) []string {
	var reasons []*Reason
	seen := map[*Reason]bool{}
	for _, c := range causes {
		r, ok := c.Constraint.Detail.(*Reason)
		if !ok || c.Constraint.Kind == resolve.KindMandatory || seen[r] {
			continue
		}
		seen[r] = true
		reasons = append(reasons, r)
	}
	cyc := explainCycles(reasons)
	var out []string
	out = append(out, explainUnsatisfiable(reasons, cyc)...)
	out = append(out, explainUniqueness(reasons)...)
	for _, r := range reasons {
		if r.Kind == ReasonConstraintConflict {
			out = append(out, r.message())
		}
	}
	out = append(out, cyc.sentences...)
	return dedupe(out)
}

// explainUnsatisfiable covers requirements and dependencies that nothing can
// satisfy, grouping the bundles of one package that fail the same way. For a bundle that no
// requirement names, it adds how the request reaches it, unless a cycle of cyc already shows that.
func explainUnsatisfiable(reasons []*Reason, cyc cycles) []string {
	type group struct {
		first    *Reason
		versions []string
	}
	var keys []string
	groups := map[string]*group{}
	for _, r := range reasons {
		if len(r.Candidates) > 0 || r.Kind == ReasonUniquePackage || r.Kind == ReasonUniqueGVK || r.Kind == ReasonConstraintConflict || r.Kind == ReasonInstalled {
			continue
		}
		key := string(r.Kind) + "|" + r.phrase()
		if r.From != nil {
			key = string(r.Kind) + "|" + r.From.Package + "|" + strings.TrimPrefix(r.phrase(), fromPhrase(r.From))
		}
		g, ok := groups[key]
		if !ok {
			g = &group{first: r}
			groups[key] = g
			keys = append(keys, key)
		}
		if r.From != nil {
			g.versions = appendOnce(g.versions, r.From.VersionString)
		}
	}
	chains := dependencyChains(reasons)
	out := make([]string, 0, len(keys))
	for _, k := range keys {
		g := groups[k]
		if len(g.versions) <= 1 {
			out = append(out, g.first.message())
		} else {
			// "package "x" 1.0.0 requires …" → "package "x" (1.0.0, 1.1.0) requires …"
			msg := strings.TrimPrefix(g.first.message(), fromPhrase(g.first.From))
			out = append(out, fmt.Sprintf("package %q (%s)%s", g.first.From.Package, strings.Join(g.versions, ", "), msg))
		}
		// A bundle that nobody asked for directly: say how the request reaches it.
		if g.first.From != nil {
			if chain := chains[g.first.From]; len(chain) > 1 && !cyc.sameCycle(chain) {
				out = append(out, fmt.Sprintf("package %q is needed through %s", g.first.From.Package, renderChain(chain)))
			}
		}
	}
	return out
}

// explainUniqueness covers two demands that need different bundles of one
// package, or bundles of two packages providing the same API.
func explainUniqueness(reasons []*Reason) []string {
	var out []string
	for _, u := range reasons {
		if u.Kind != ReasonUniquePackage && u.Kind != ReasonUniqueGVK {
			continue
		}
		members := map[*Bundle]bool{}
		for _, b := range u.Candidates {
			members[b] = true
		}
		type demand struct {
			r    *Reason
			want []*Bundle // the candidates of r within u
		}
		var demands []demand
		for _, r := range reasons {
			switch r.Kind {
			case ReasonRequired, ReasonInstalled, ReasonPackageDependency, ReasonGVKDependency, ReasonConstraintDependency:
			default:
				continue
			}
			var want []*Bundle
			for _, b := range r.Candidates {
				if members[b] {
					want = append(want, b)
				}
			}
			if len(want) > 0 {
				demands = append(demands, demand{r: r, want: want})
			}
		}
		found := false
		for i := 0; i < len(demands) && !found; i++ {
			for j := i + 1; j < len(demands) && !found; j++ {
				a, b := demands[i], demands[j]
				if overlaps(a.want, b.want) {
					continue
				}
				if a.r.Kind == ReasonInstalled {
					a, b = b, a
				}
				pa, pb := demandPhrase(a.r, b.want), demandPhrase(b.r, a.want)
				if u.Kind == ReasonUniquePackage {
					out = append(out, pa+", but "+pb)
				} else {
					out = append(out, fmt.Sprintf("%s, but %s and %s", u.phrase(), pa, pb))
				}
				found = true
			}
		}
		if !found && len(demands) >= 2 {
			parts := make([]string, len(demands))
			for i, d := range demands {
				parts[i] = demandPhrase(d.r, nil)
			}
			out = append(out, fmt.Sprintf("%s, but %s", u.phrase(), strings.Join(parts, " and ")))
		}
	}
	return out
}

func demandPhrase(r *Reason, others []*Bundle) string {
	if r.Kind == ReasonInstalled {
		return r.Installed.phrase(others)
	}
	return r.phrase()
}

func overlaps(a, b []*Bundle) bool {
	for _, x := range a {
		for _, y := range b {
			if x == y {
				return true
			}
		}
	}
	return false
}

func dedupe(in []string) []string {
	seen := map[string]bool{}
	out := in[:0]
	for _, s := range in {
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	return out
}
