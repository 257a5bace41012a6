package preview

import (
	"context"
	"fmt"
	"slices"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/olmv1/olmv1/deppy/pkg/operators"
	operatorsv1alpha1 "github.com/olmv1/olmv1/operator-controller/api/v1alpha1"
	"github.com/olmv1/olmv1/operator-controller/internal/controller"
)

// maxDependencyRounds bounds how many times dependency Operators are added and the Operators
// resolved again (each round adds the packages the last one needed; a chain deeper than this is
// reported).
const maxDependencyRounds = 10

// resolution is the outcome of resolving the Operators after the change, including the Operators
// created for dependencies.
type resolution struct {
	ops      []operatorsv1alpha1.Operator
	outcomes map[string]operators.Outcome
	// created are the dependency Operators a reconcile would create, by name.
	created map[string]bool
	// joined are dependency Operators created earlier for other Operators that the changed Operator
	// needs too (its ownerReference is added); released are those it no longer needs but others do
	// (its ownerReference is removed); deleted are those nothing needs any more.
	joined, released, deleted []*operatorsv1alpha1.Operator
	// notes say what a reconcile would fail to do.
	notes []string
}

// resolveChange resolves the Operators with the change applied, adding the dependency Operators a
// reconcile would create (dependencyPolicy Install), and removing those created earlier that the
// changed Operator no longer needs.
func (p *Planner) resolveChange(ctx context.Context, st *State, pr proposal) (*resolution, error) {
	ops := make([]operatorsv1alpha1.Operator, 0, len(st.ops)+1)
	replaced := false
	for _, op := range st.ops {
		if op.Name == pr.after.Name {
			op, replaced = *pr.after, true
		}
		ops = append(ops, op)
	}
	if !replaced {
		ops = append(ops, *pr.after)
	}
	res := &resolution{created: map[string]bool{}}
	// The controller creates dependency Operators after the Operator that needs them.
	created := p.now()
	if c := pr.after.CreationTimestamp.Time; c.After(created) {
		created = c
	}
	for round := 0; ; round++ {
		out := st.resolve(ctx, ops)
		res.ops, res.outcomes = ops, out
		added := false
		byName := map[string]*operatorsv1alpha1.Operator{}
		for i := range ops {
			byName[ops[i].Name] = &ops[i]
		}
		for i, n := 0, len(ops); i < n; i++ {
			op := &ops[i]
			b := out[op.Name].Bundle
			if op.Spec.DependencyPolicy != operatorsv1alpha1.DependencyPolicyInstall || b == nil {
				continue
			}
			for _, d := range b.Dependencies {
				if d.Operator != "" {
					continue
				}
				dep := controller.DependencyOperator(op, d.Package)
				if have := byName[dep.Name]; have != nil {
					// Created for another dependent in this plan, or another package's Operator
					// has the name: the reconcile cannot create it.
					if have.Spec.PackageName != d.Package && round == 0 {
						res.notes = append(res.notes, fmt.Sprintf("Operator %s: package %q is needed but the Operator %q that would install it exists for package %q: operator-controller would report it; create an Operator with packageName %q under another name",
							op.Name, d.Package, dep.Name, have.Spec.PackageName, d.Package))
					}
					continue
				}
				created = created.Add(time.Millisecond)
				dep.CreationTimestamp.Time = created
				ops = append(ops, *dep)
				byName[dep.Name] = &ops[len(ops)-1]
				res.created[dep.Name] = true
				added = true
			}
		}
		if !added {
			break
		}
		if round == maxDependencyRounds {
			return nil, fmt.Errorf("dependencies still need more Operators after %d rounds of resolution: %v", maxDependencyRounds, sortedKeys(res.created))
		}
	}
	res.joined, res.released, res.deleted = dependencyOwners(res, pr.after)
	if len(res.deleted) > 0 {
		gone := map[string]bool{}
		for _, r := range res.deleted {
			gone[r.Name] = true
		}
		keep := make([]operatorsv1alpha1.Operator, 0, len(res.ops))
		for _, op := range res.ops {
			if !gone[op.Name] {
				keep = append(keep, op)
			}
		}
		res.ops, res.outcomes = keep, st.resolve(ctx, keep)
	}
	return res, nil
}

// dependencyOwners is what a reconcile of op does to the dependency Operators (labelled, created by
// operator-controller) besides creating new ones, as its ensureDependencies does: with
// dependencyPolicy Install, it joins those its bundle needs that other Operators created (adds its
// ownerReference); it releases those it owns and no longer needs (removes its ownerReference) and
// deletes those of them that nobody else owns. Nothing happens when op does not resolve.
func dependencyOwners(res *resolution, op *operatorsv1alpha1.Operator) (joined, released, deleted []*operatorsv1alpha1.Operator) {
	b := res.outcomes[op.Name].Bundle
	if b == nil {
		return nil, nil, nil
	}
	install := op.Spec.DependencyPolicy == operatorsv1alpha1.DependencyPolicyInstall
	byName := map[string]*operatorsv1alpha1.Operator{}
	for i := range res.ops {
		byName[res.ops[i].Name] = &res.ops[i]
	}
	isDependency := func(o *operatorsv1alpha1.Operator) bool {
		return o.Labels[operatorsv1alpha1.LabelDependency] == "true" && o.DeletionTimestamp.IsZero()
	}
	ownedBy := func(o *operatorsv1alpha1.Operator) bool {
		return slices.ContainsFunc(o.OwnerReferences, func(r metav1.OwnerReference) bool { return r.UID == op.UID })
	}
	needed := map[string]bool{}
	for _, d := range b.Dependencies {
		name := d.Operator
		if name == "" && install {
			name = controller.DependencyOperator(op, d.Package).Name
		}
		if name == "" || needed[name] {
			continue
		}
		needed[name] = true
		if dep := byName[name]; install && name != op.Name && dep != nil && !res.created[name] && isDependency(dep) && !ownedBy(dep) {
			joined = append(joined, dep)
		}
	}
	if op.UID == "" {
		return joined, nil, nil // a new Operator owns nothing yet
	}
	for i := range res.ops {
		dep := &res.ops[i]
		if needed[dep.Name] || !isDependency(dep) || !ownedBy(dep) {
			continue
		}
		if len(dep.OwnerReferences) == 1 {
			deleted = append(deleted, dep)
		} else {
			released = append(released, dep)
		}
	}
	return joined, released, deleted
}
