package olm

import (
	"context"
	"sort"

	"github.com/olmv1/olmv1/deppy/pkg/resolve"
)

// Pipeline returns the default stages for a problem: required-packages,
// installed-bundles, bundle-dependencies, cluster-version (when the problem
// knows the cluster's version), uniqueness.
func Pipeline(idx *Index, p Problem) resolve.Pipeline {
	stages := resolve.Pipeline{
		RequiredPackages(idx, p.Requirements),
		InstalledBundles(idx, p.Installed, p.Requirements),
		BundleDependencies(idx),
	}
	if p.Cluster.Known() {
		stages = append(stages, ClusterVersions(p.Cluster, p.Installed))
	}
	return append(stages, Uniqueness())
}

// Resolver resolves problems against an index.
type Resolver struct {
	Index *Index
	// Customize, when set, reshapes the default pipeline (add, replace or
	// remove stages) before it runs.
	Customize func(resolve.Pipeline) (resolve.Pipeline, error)
}

// Resolve solves the problem against idx with the default pipeline.
func Resolve(ctx context.Context, idx *Index, p Problem) (*Result, error) {
	return (&Resolver{Index: idx}).Resolve(ctx, p)
}

// Resolve solves every requirement and installed package together. When
// there is no solution the error is a *resolve.NotSatisfiableError whose
// Summary names the packages, the constraints and the candidates that failed.
func (r *Resolver) Resolve(ctx context.Context, p Problem) (*Result, error) {
	if err := p.Cluster.Validate(); err != nil {
		return nil, err
	}
	pipeline := Pipeline(r.Index, p)
	if r.Customize != nil {
		var err error
		if pipeline, err = r.Customize(pipeline); err != nil {
			return nil, err
		}
	}
	sol, err := (&resolve.Resolver{Pipeline: pipeline, Explainer: Explainer()}).Resolve(ctx)
	if err != nil {
		return nil, err
	}
	return newResult(sol), nil
}

// SelectionReason says why a bundle is part of the result.
type SelectionReason string

// Why a bundle is selected.
const (
	SelectedRequired   SelectionReason = "Required"
	SelectedInstalled  SelectionReason = "Installed"
	SelectedDependency SelectionReason = "Dependency"
)

// Selection is one chosen bundle.
type Selection struct {
	Package     string   `json:"package"`
	Bundle      string   `json:"bundle"`
	Version     string   `json:"version"`
	Catalog     string   `json:"catalog,omitempty"`
	Image       string   `json:"image,omitempty"`
	Channels    []string `json:"channels,omitempty"`
	Deprecation string   `json:"deprecation,omitempty"`
	// Reason is Required (a requirement names the package), Installed (kept
	// because it is installed) or Dependency (another selected bundle needs it).
	Reason SelectionReason `json:"reason"`
	// RequiredBy lists the requirements (by name) or bundles that need it.
	RequiredBy []string `json:"requiredBy,omitempty"`
	// InstalledVersion is the version installed before, when there is one.
	InstalledVersion string `json:"installedVersion,omitempty"`
	// Dependencies are this bundle's dependencies and the selected bundles that satisfy them.
	Dependencies []SatisfiedDependency `json:"dependencies,omitempty"`

	bundle *Bundle
}

// SatisfiedDependency is one dependency of a selected bundle and the selected bundle satisfying it.
type SatisfiedDependency struct {
	// Requirement is the bundle's property, e.g. "olm.gvk.required kubevirt.io/v1 KubeVirt",
	// "olm.package.required cdi-operator >=1.50.0" or "olm.constraint <the constraint>".
	Requirement string `json:"requirement"`
	// Package and Bundle name the selected bundle that satisfies it.
	Package string `json:"package"`
	Bundle  string `json:"bundle"`
	Version string `json:"version"`
}

// requirementText renders the bundle property behind a dependency.
func requirementText(r *Reason) string {
	switch r.Kind {
	case ReasonPackageDependency:
		if r.VersionRange == "" {
			return "olm.package.required " + visible(r.Package)
		}
		return "olm.package.required " + visible(r.Package) + " " + visible(r.VersionRange)
	case ReasonGVKDependency:
		return "olm.gvk.required " + r.GVK.String()
	case ReasonConstraintDependency:
		return "olm.constraint " + describeConstraint(r.Constraint)
	}
	return string(r.Kind)
}

// BundleInfo returns the full bundle behind the selection.
func (s Selection) BundleInfo() *Bundle { return s.bundle }

// Result is a solution: one bundle per required package, plus the installed
// packages kept and the dependencies pulled in.
type Result struct {
	// Selections lists required packages first (in requirement order), then
	// installed packages nobody required, then dependencies (by package).
	Selections []Selection `json:"selections"`
	// Skipped says, for each bundle of the problem that the cluster cannot run (Problem.Cluster),
	// which bundle was skipped and why.
	Skipped []string `json:"skipped,omitempty"`
}

// Package returns the selection for a package, or nil.
func (r *Result) Package(name string) *Selection {
	for i := range r.Selections {
		if r.Selections[i].Package == name {
			return &r.Selections[i]
		}
	}
	return nil
}

func newResult(sol *resolve.Solution) *Result {
	chosen := map[string]*Bundle{}
	var order []string
	requiredBy := map[resolve.Identifier][]string{}
	deps := map[string][]SatisfiedDependency{}
	for _, v := range sol.Selected() {
		if b, ok := v.Entity.(*Bundle); ok {
			if _, dup := chosen[b.Package]; !dup {
				order = append(order, b.Package)
			}
			chosen[b.Package] = b
			for _, c := range v.Constraints {
				if c.Kind != resolve.KindDependency {
					continue
				}
				for _, id := range c.IDs {
					if sol.IsSelected(id) {
						requiredBy[id] = appendOnce(requiredBy[id], b.Name)
						r, isReason := c.Detail.(*Reason)
						by, isBundle := sol.Variables.Get(id).Entity.(*Bundle)
						if isReason && isBundle && r.Kind != ReasonRequired && r.Kind != ReasonInstalled {
							deps[b.Package] = append(deps[b.Package], SatisfiedDependency{
								Requirement: requirementText(r), Package: by.Package, Bundle: by.Name, Version: by.VersionString})
						}
						break
					}
				}
			}
		}
	}
	res := &Result{}
	for _, v := range sol.Variables.All() {
		for _, c := range v.Constraints {
			if skip, ok := c.Detail.(ClusterSkip); ok {
				res.Skipped = append(res.Skipped, skip.Message)
			}
		}
	}
	placed := map[string]bool{}
	place := func(pkg string, reason SelectionReason, by []string, installed string) {
		b := chosen[pkg]
		if b == nil || placed[pkg] {
			return
		}
		placed[pkg] = true
		res.Selections = append(res.Selections, Selection{
			Package: b.Package, Bundle: b.Name, Version: b.VersionString, Catalog: b.Catalog, Image: b.Image,
			Channels: b.Channels, Deprecation: b.Deprecation, Reason: reason, RequiredBy: by,
			InstalledVersion: installed, Dependencies: deps[pkg], bundle: b,
		})
	}
	installedVersion := map[string]string{}
	var installedOrder []string
	for _, v := range sol.Variables.All() {
		if p, ok := v.Entity.(*InstalledPackage); ok {
			installedVersion[p.Installed.Package] = p.Current[0].VersionString
			installedOrder = append(installedOrder, p.Installed.Package)
		}
	}
	for _, v := range sol.Variables.All() {
		if rp, ok := v.Entity.(*RequiredPackage); ok {
			name := rp.Requirement.Name
			if name == "" {
				name = rp.Requirement.Package
			}
			place(rp.Requirement.Package, SelectedRequired, []string{name}, installedVersion[rp.Requirement.Package])
		}
	}
	for _, pkg := range installedOrder {
		place(pkg, SelectedInstalled, nil, installedVersion[pkg])
	}
	sort.Strings(order)
	for _, pkg := range order {
		place(pkg, SelectedDependency, requiredBy[chosen[pkg].ID()], "")
	}
	return res
}

func appendOnce(list []string, s string) []string {
	for _, x := range list {
		if x == s {
			return list
		}
	}
	return append(list, s)
}
