package olm

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/olmv1/olmv1/deppy/pkg/resolve"
)

// ReasonKind says why a constraint exists.
type ReasonKind string

// The reasons behind the constraints of this package.
const (
	ReasonRequired             ReasonKind = "Required"
	ReasonInstalled            ReasonKind = "Installed"
	ReasonPackageDependency    ReasonKind = "PackageDependency"
	ReasonGVKDependency        ReasonKind = "GVKDependency"
	ReasonConstraintDependency ReasonKind = "ConstraintDependency"
	ReasonConstraintConflict   ReasonKind = "ConstraintConflict"
	ReasonUniquePackage        ReasonKind = "UniquePackage"
	ReasonUniqueGVK            ReasonKind = "UniqueGVK"
)

// Reason is the Detail of every constraint this package creates: what it
// stands for, in data an explainer (or a controller writing conditions) can use.
type Reason struct {
	Kind ReasonKind
	// From is the bundle whose property created a dependency or conflict.
	From *Bundle
	// Requirement is set for ReasonRequired.
	Requirement *Requirement
	// Installed is set for ReasonInstalled.
	Installed *InstalledPackage
	// Package is the package the constraint restricts, when there is one.
	Package string
	// VersionRange is the range of a package dependency.
	VersionRange string
	// GVK is set for GVK dependencies and GVK uniqueness.
	GVK *GVK
	// Constraint is set for olm.constraint dependencies and conflicts.
	Constraint *Constraint
	// Candidates are the bundles that satisfy a dependency, in preference
	// order, or the bundles of a uniqueness constraint.
	Candidates []*Bundle
	// NoCandidates, when Candidates is empty, says why nothing matched.
	NoCandidates string
}

// phrase says what the constraint demands, without its candidates.
func (r *Reason) phrase() string {
	switch r.Kind {
	case ReasonRequired:
		return fmt.Sprintf("%s requires %s", r.Requirement.who(), r.Requirement.describe())
	case ReasonPackageDependency:
		return fmt.Sprintf("%s requires package %q in range %q", fromPhrase(r.From), r.Package, r.VersionRange)
	case ReasonGVKDependency:
		return fmt.Sprintf("%s requires the API %s", fromPhrase(r.From), r.GVK)
	case ReasonConstraintDependency:
		return fmt.Sprintf("%s requires %s", fromPhrase(r.From), describeConstraint(r.Constraint))
	case ReasonConstraintConflict:
		msg := ""
		if r.Constraint.FailureMessage != "" {
			msg = " (olm.constraint: " + visible(r.Constraint.FailureMessage) + ")"
		}
		return fmt.Sprintf("%s cannot be installed together with any bundle matching %s%s", fromPhrase(r.From), renderList(r.Constraint.Not.Constraints), msg)
	case ReasonInstalled:
		return r.Installed.phrase(nil)
	case ReasonUniquePackage:
		return fmt.Sprintf("only one bundle of package %q can be installed", r.Package)
	case ReasonUniqueGVK:
		return fmt.Sprintf("only one bundle may provide the API %s", r.GVK)
	}
	return string(r.Kind)
}

// message is the full sentence: the phrase and what satisfies it.
func (r *Reason) message() string {
	switch r.Kind {
	case ReasonUniquePackage, ReasonUniqueGVK:
		return fmt.Sprintf("%s (candidates: %s)", r.phrase(), bundleList(r.Candidates))
	case ReasonConstraintConflict:
		return fmt.Sprintf("%s (conflicting: %s)", r.phrase(), bundleList(r.Candidates))
	case ReasonInstalled:
		return r.Installed.message()
	}
	if len(r.Candidates) == 0 {
		why := r.NoCandidates
		if why == "" {
			why = "nothing in the catalogs matches"
		}
		return fmt.Sprintf("%s, but %s", r.phrase(), why)
	}
	return fmt.Sprintf("%s (candidates: %s)", r.phrase(), bundleList(r.Candidates))
}

// constraint returns c carrying this reason.
func (r *Reason) constraint(c resolve.Constraint) resolve.Constraint {
	return c.WithDetail(r).WithMessage(r.message())
}

// visible returns s as is when every character of it shows when printed, and quoted (Go syntax,
// as %q does) otherwise, so that a name from a catalog or a cluster with a zero-width space, a
// right-to-left override, a control character or a NUL cannot hide in a message or reorder it.
func visible(s string) string {
	if q := strconv.Quote(s); q[1:len(q)-1] != s {
		return q
	}
	return s
}

// fromPhrase names a bundle by package and version: `package "b" 1.2.0`.
func fromPhrase(b *Bundle) string {
	return fmt.Sprintf("package %q %s", b.Package, b.VersionString)
}

// bundleList renders up to 8 bundles as "name (catalog), …".
func bundleList(bs []*Bundle) string {
	const limit = 8
	parts := make([]string, 0, limit+1)
	for i, b := range bs {
		if i == limit {
			parts = append(parts, fmt.Sprintf("and %d more", len(bs)-limit))
			break
		}
		if b.Catalog == "" {
			parts = append(parts, visible(b.Name)+" (installed, not in any catalog)")
			continue
		}
		parts = append(parts, fmt.Sprintf("%s from %q", visible(b.Name), b.Catalog))
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ", ")
}

// versionList renders up to 10 distinct versions of bs, newest first.
func versionList(bs []*Bundle) string {
	const limit = 10
	seen := map[string]bool{}
	var parts []string
	for _, b := range bs {
		if seen[b.VersionString] {
			continue
		}
		seen[b.VersionString] = true
		if len(parts) == limit {
			parts = append(parts, "…")
			break
		}
		parts = append(parts, b.VersionString)
	}
	return strings.Join(parts, ", ")
}

func describeConstraint(c *Constraint) string {
	if c.FailureMessage != "" {
		return fmt.Sprintf("%s (olm.constraint: %s)", renderConstraint(c.Constraint), visible(c.FailureMessage))
	}
	return renderConstraint(c.Constraint)
}
