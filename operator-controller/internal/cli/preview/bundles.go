package preview

import (
	"fmt"
	"sort"

	"github.com/olmv1/olmv1/deppy/pkg/operators"
	operatorsv1alpha1 "github.com/olmv1/olmv1/operator-controller/api/v1alpha1"
	"github.com/olmv1/olmv1/operator-controller/internal/controller"
)

// planBundles lists, for the changed Operator, its dependencies, and every other Operator whose
// bundle moves, the bundle chosen and why. baseline is the resolution before the change.
func planBundles(st *State, pr proposal, res *resolution, baseline map[string]operators.Outcome) (bundles []PlannedBundle, affected []string) {
	ops := map[string]*operatorsv1alpha1.Operator{}
	for i := range res.ops {
		ops[res.ops[i].Name] = &res.ops[i]
	}
	names := []string{pr.after.Name}
	seen := map[string]bool{pr.after.Name: true}
	add := func(n string) {
		if !seen[n] && ops[n] != nil {
			seen[n] = true
			names = append(names, n)
		}
	}
	// Dependencies, as the changed Operator's bundle names them, then Operators created for them.
	if b := res.outcomes[pr.after.Name].Bundle; b != nil {
		for _, d := range b.Dependencies {
			if d.Operator != "" {
				add(d.Operator)
			} else {
				add(d.Package)
			}
		}
	}
	for _, n := range sortedKeys(res.created) {
		add(n)
	}
	others := make([]string, 0, len(res.ops))
	for n, o := range res.outcomes {
		if !seen[n] && bundleName(o.Bundle) != bundleName(baseline[n].Bundle) {
			others = append(others, n)
		}
	}
	sort.Strings(others)
	names = append(names, others...)

	for _, n := range names {
		op, o := ops[n], res.outcomes[n]
		if o.Bundle == nil {
			continue
		}
		pb := PlannedBundle{
			Operator: n, Package: o.Bundle.Package, Bundle: o.Bundle.Name, Version: o.Bundle.Version,
			Catalog: o.Bundle.Catalog, Image: o.Bundle.Image,
		}
		switch {
		case n == pr.after.Name && pr.before == nil:
			pb.OperatorCreated = byCLI
		case res.created[n]:
			pb.OperatorCreated = byOperatorController
		}
		installed := installedOf(st, op)
		if installed != nil {
			pb.Installed = installed.Version
		}
		pb.Change = changeOf(installed, o.Bundle)
		if pb.Change != "unchanged" {
			affected = append(affected, n)
		}
		pb.Why = why(st, op, o.Bundle, installed, dependents(res, n))
		bundles = append(bundles, pb)
	}
	return bundles, affected
}

// bundleName is the name of b, "" for nil.
func bundleName(b *operators.Bundle) string {
	if b == nil {
		return ""
	}
	return b.Name
}

// installedOf is the bundle op's BundleDeployment installs (as resolution counts it), nil if none.
func installedOf(st *State, op *operatorsv1alpha1.Operator) *operators.Installed {
	bd := st.bds[op.Name]
	if bd == nil {
		return nil
	}
	v := bd.Annotations[controller.AnnotationBundleVersion]
	if v == "" || bd.Annotations[controller.AnnotationPackage] != op.Spec.PackageName {
		return nil
	}
	return &operators.Installed{BundleName: bd.Annotations[controller.AnnotationBundleName], Version: v}
}

// dependents lists the bundles of the resolution that depend on the Operator named n, with the
// requirement each one has.
func dependents(res *resolution, n string) []string {
	pkg := ""
	for i := range res.ops {
		if res.ops[i].Name == n {
			pkg = res.ops[i].Spec.PackageName
		}
	}
	var out []string
	for _, name := range sortedKeys(res.outcomes) {
		b := res.outcomes[name].Bundle
		if b == nil || name == n {
			continue
		}
		for _, d := range b.Dependencies {
			if d.Package == pkg {
				out = append(out, fmt.Sprintf("%s (Operator %s) requires %s", b.Name, name, d.Requirement))
			}
		}
	}
	return out
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
