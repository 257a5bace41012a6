package olm

import (
	"context"
	"sort"

	"github.com/olmv1/olmv1/deppy/pkg/resolve"
)

// Uniqueness adds the rules that at most one bundle of each package, and at
// most one bundle providing each GVK, is selected. It looks at every bundle
// variable present, so it belongs at the end of a pipeline.
func Uniqueness() resolve.VariableSource {
	return resolve.NewSource(StageUniqueness, func(_ context.Context, vars *resolve.Variables) error {
		byPackage := map[string][]*Bundle{}
		byGVK := map[GVK][]*Bundle{}
		var pkgOrder []string
		var gvkOrder []GVK
		for _, v := range vars.All() {
			b, ok := v.Entity.(*Bundle)
			if !ok {
				continue
			}
			if _, seen := byPackage[b.Package]; !seen {
				pkgOrder = append(pkgOrder, b.Package)
			}
			byPackage[b.Package] = append(byPackage[b.Package], b)
			for _, g := range b.Provides {
				if _, seen := byGVK[g]; !seen {
					gvkOrder = append(gvkOrder, g)
				}
				byGVK[g] = append(byGVK[g], b)
			}
		}
		var add []*resolve.Variable
		for _, pkg := range pkgOrder {
			bs := byPackage[pkg]
			if len(bs) < 2 {
				continue
			}
			r := &Reason{Kind: ReasonUniquePackage, Package: pkg, Candidates: bs}
			add = append(add, resolve.NewVariable(resolve.Identifier("unique/package/"+pkg), r,
				r.constraint(resolve.AtMost(1, ids(bs)...))))
		}
		sort.SliceStable(gvkOrder, func(i, j int) bool { return gvkOrder[i].String() < gvkOrder[j].String() })
		for _, g := range gvkOrder {
			bs := byGVK[g]
			if !severalPackages(bs) {
				continue // one package: already covered by package uniqueness
			}
			g := g
			r := &Reason{Kind: ReasonUniqueGVK, GVK: &g, Candidates: bs}
			add = append(add, resolve.NewVariable(resolve.Identifier("unique/gvk/"+g.Group+"/"+g.Version+"/"+g.Kind), r,
				r.constraint(resolve.AtMost(1, ids(bs)...))))
		}
		return vars.Add(add...)
	})
}

func severalPackages(bs []*Bundle) bool {
	for _, b := range bs[1:] {
		if b.Package != bs[0].Package {
			return true
		}
	}
	return false
}
