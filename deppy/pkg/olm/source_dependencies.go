package olm

import (
	"context"
	"fmt"

	"github.com/olmv1/olmv1/deppy/pkg/resolve"
)

// BundleDependencies adds the dependencies of every bundle variable, and
// variables for the bundles that satisfy them, until no new bundle appears:
//
//   - olm.package.required: a bundle of the package in the version range;
//   - olm.gvk.required: a bundle providing the GVK;
//   - olm.constraint (package, gvk, cel, all, any): a bundle matching it;
//   - olm.constraint with a top-level not: a conflict with every bundle
//     of the problem matching the inner constraints.
//
// Candidates come from every catalog of the index, in the order of preferred
// (a dependency names no channel): non-deprecated bundles first, then bundles
// of their package's default channel, then the highest version, then the
// highest catalog priority.
func BundleDependencies(idx *Index) resolve.VariableSource {
	return resolve.NewSource(StageBundleDependencies, func(ctx context.Context, vars *resolve.Variables) error {
		d := &dependencies{idx: idx, vars: vars, done: map[resolve.Identifier]bool{}}
		for i := 0; i < vars.Len(); i++ {
			if i%256 == 0 {
				if err := ctx.Err(); err != nil {
					return err
				}
			}
			v := vars.All()[i]
			b, ok := v.Entity.(*Bundle)
			if !ok || b.Catalog == "" || d.done[v.ID] {
				continue
			}
			d.done[v.ID] = true
			if err := d.add(v, b); err != nil {
				return err
			}
		}
		return d.addConflicts()
	})
}

type dependencies struct {
	idx       *Index
	vars      *resolve.Variables
	done      map[resolve.Identifier]bool
	negations []negation
}

// negation is a top-level "not" olm.constraint, applied once every bundle is known.
type negation struct {
	v      *resolve.Variable
	from   *Bundle
	c      *Constraint
	inner  predicate
	reason *Reason
}

func (d *dependencies) add(v *resolve.Variable, b *Bundle) error {
	for _, req := range b.PackagesRequired {
		var cands []*Bundle
		for _, c := range d.idx.Bundles(req.Package) {
			if req.matches(c.Version) {
				cands = append(cands, c)
			}
		}
		r := &Reason{Kind: ReasonPackageDependency, From: b, Package: req.Package, VersionRange: req.VersionRange, Candidates: preferred(cands, "")}
		if len(cands) == 0 {
			if all := d.idx.Bundles(req.Package); len(all) == 0 {
				r.NoCandidates = fmt.Sprintf("no catalog has package %q", req.Package)
			} else {
				r.NoCandidates = fmt.Sprintf("no version of %q is in that range (available: %s)", req.Package, versionList(all))
			}
		}
		if err := d.depend(v, r); err != nil {
			return err
		}
	}
	for i := range b.GVKsRequired {
		g := b.GVKsRequired[i]
		cands := d.idx.Providers(g)
		r := &Reason{Kind: ReasonGVKDependency, From: b, GVK: &g, Candidates: preferred(cands, "")}
		if len(cands) == 0 {
			r.NoCandidates = "no bundle in the catalogs provides it"
		}
		if err := d.depend(v, r); err != nil {
			return err
		}
	}
	for i := range b.Constraints {
		c := &b.Constraints[i]
		if c.Not != nil && c.All == nil && c.Any == nil && c.Package == nil && c.GVK == nil && c.Cel == nil {
			inner, err := compilePredicate(c.Constraint)
			if err != nil {
				if err := d.invalid(v, b, c, err); err != nil {
					return err
				}
				continue
			}
			d.negations = append(d.negations, negation{v: v, from: b, c: c, inner: inner,
				reason: &Reason{Kind: ReasonConstraintConflict, From: b, Constraint: c}})
			continue
		}
		match, err := compilePredicate(c.Constraint)
		if err != nil {
			if err := d.invalid(v, b, c, err); err != nil {
				return err
			}
			continue
		}
		var cands []*Bundle
		for _, other := range d.idx.AllBundles() {
			if match(other) {
				cands = append(cands, other)
			}
		}
		r := &Reason{Kind: ReasonConstraintDependency, From: b, Constraint: c, Candidates: preferred(cands, "")}
		if len(cands) == 0 {
			r.NoCandidates = "no bundle in the catalogs matches it"
		}
		if err := d.depend(v, r); err != nil {
			return err
		}
	}
	return nil
}

// invalid makes a bundle with an unusable olm.constraint unselectable, and says why.
func (d *dependencies) invalid(v *resolve.Variable, b *Bundle, c *Constraint, err error) error {
	r := &Reason{Kind: ReasonConstraintDependency, From: b, Constraint: c,
		NoCandidates: fmt.Sprintf("the constraint is invalid: %v", err)}
	return d.depend(v, r)
}

func (d *dependencies) depend(v *resolve.Variable, r *Reason) error {
	v.Add(r.constraint(resolve.Dependency(ids(r.Candidates)...)))
	return addBundles(d.vars, r.Candidates)
}

// addConflicts applies top-level "not" constraints to the bundles of the problem.
func (d *dependencies) addConflicts() error {
	for _, n := range d.negations {
		var hits []*Bundle
		for _, v := range d.vars.All() {
			other, ok := v.Entity.(*Bundle)
			if !ok || other == n.from || other.Catalog == "" {
				continue
			}
			// The constraint is written as "not": the bundles it forbids are
			// those for which the inner "not" is false.
			if !n.inner(other) {
				hits = append(hits, other)
			}
		}
		n.reason.Candidates = hits
		for _, h := range hits {
			n.v.Add(n.reason.constraint(resolve.Conflict(h.ID())))
		}
	}
	return nil
}
