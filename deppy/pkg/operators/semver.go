package operators

import (
	"context"
	"fmt"

	"github.com/blang/semver/v4"

	"github.com/olmv1/olmv1/deppy/pkg/olm"
	deppyresolve "github.com/olmv1/olmv1/deppy/pkg/resolve"
)

// The semver guard rails. An installed Operator upgrades by itself only to versions semver calls
// compatible with the one installed: the same major version from 1.0.0 on, the same minor version in
// 0.x, and nothing at all in 0.0.x (upstream OLM v1's rule). A newer version the catalogs offer
// beyond that range waits (Outcome.Waiting) until a person takes it, by one of:
//   - spec.version: an explicit range (or exact version) replaces the guard rails altogether;
//   - spec.approvedVersion (upgradePolicy Manual): the approved version is installed;
//   - spec.upgradeScope AnyVersion (Request.AnyVersion): every upgrade the catalogs offer is
//     followed, as without guard rails.
//
// The rule is a pipeline stage (StageSemverGuardRails) that prohibits the bundles of a guarded
// Operator's package outside the range, so that a conflict it causes is explained like any other.

// StageSemverGuardRails is the pipeline stage that keeps automatic upgrades within the installed
// version's semver-compatible range.
const StageSemverGuardRails = "semver-guard-rails"

// Waiting is a newer version than the installed one that the Operator's catalogs offer as an upgrade
// and that the semver guard rails keep from being installed automatically.
type Waiting struct {
	// Name, Version and Catalog identify the bundle.
	Name    string `json:"name"`
	Version string `json:"version"`
	Catalog string `json:"catalog"`
	// Message says why it waits and how to take it: "2.0.0 is available but waits: automatic
	// upgrades stay within major 1 (…)".
	Message string `json:"message"`
}

// compatRange is the semver-compatible range of an installed version: the versions automatic
// upgrades may reach from it.
type compatRange struct {
	from semver.Version
}

// guardOf returns the range r's automatic upgrades stay in, or nil when r has no guard rails: it
// installs nothing yet, names its versions itself (spec.version, spec.approvedVersion), or opted
// out (spec.upgradeScope AnyVersion).
func guardOf(r Request) *compatRange {
	if r.Installed == nil || r.AnyVersion || r.VersionRange != "" || r.ApprovedVersion != "" {
		return nil
	}
	v, err := semver.ParseTolerant(r.Installed.Version)
	if err != nil {
		return nil
	}
	return &compatRange{from: v}
}

// contains reports whether v is semver-compatible with the installed version.
func (c *compatRange) contains(v semver.Version) bool {
	switch {
	case c.from.Major > 0:
		return v.Major == c.from.Major
	case c.from.Minor > 0:
		return v.Major == 0 && v.Minor == c.from.Minor
	default:
		return v.Major == 0 && v.Minor == 0 && v.Patch == c.from.Patch
	}
}

// scope says where automatic upgrades stay: "within major 1", "within minor 0.3 (in 0.x the minor
// version is the compatible range)", "… never (0.0.x versions …)".
func (c *compatRange) scope() string {
	switch {
	case c.from.Major > 0:
		return fmt.Sprintf("automatic upgrades stay within major %d", c.from.Major)
	case c.from.Minor > 0:
		return fmt.Sprintf("automatic upgrades stay within minor 0.%d (a 0.x version is compatible only with its own minor)", c.from.Minor)
	default:
		return fmt.Sprintf("a 0.0.x version (%s) is never upgraded automatically", c.from)
	}
}

// suggestedRange is a spec.version that takes v and its compatible upgrades.
func suggestedRange(v semver.Version) string {
	switch {
	case v.Major > 0:
		return fmt.Sprintf(">=%d.0.0 <%d.0.0", v.Major, v.Major+1)
	case v.Minor > 0:
		return fmt.Sprintf(">=0.%d.0 <0.%d.0", v.Minor, v.Minor+1)
	default:
		return fmt.Sprintf("%d.%d.%d", v.Major, v.Minor, v.Patch)
	}
}

// waitMessage says why b waits for Operator r and how to take it.
func waitMessage(r Request, c *compatRange, b *olm.Bundle) string {
	take := fmt.Sprintf("set spec.version to a range that includes it, e.g. %q, or spec.upgradeScope: AnyVersion to follow every upgrade the catalogs offer", suggestedRange(b.Version))
	if r.Manual {
		take = fmt.Sprintf("approve it with spec.approvedVersion: %q, ", b.VersionString) + take
	}
	return fmt.Sprintf("%s is available but waits: %s (%s)", b.VersionString, c.scope(), take)
}

// semverGuardRails adds the StageSemverGuardRails stage after bundle dependencies: every bundle of a
// guarded Operator's package outside its compatible range is prohibited. It also records, per
// guarded request that is not pinned (a Manual one pinned to its installed version keeps what the
// unpinned solve found), the best upgrade that waits.
func (s *solver) semverGuardRails(p deppyresolve.Pipeline) (deppyresolve.Pipeline, error) {
	stage := deppyresolve.NewSource(StageSemverGuardRails, func(_ context.Context, vars *deppyresolve.Variables) error {
		guarded := map[string]*compatRange{}
		for pkg, name := range s.requestedBy {
			if c := s.guards[name]; c != nil {
				guarded[pkg] = c
			}
		}
		if len(guarded) == 0 {
			return nil
		}
		installed := map[string]*olm.InstalledPackage{}
		for _, v := range vars.All() {
			switch e := v.Entity.(type) {
			case *olm.InstalledPackage:
				installed[e.Installed.Package] = e
			case *olm.Bundle:
				if c := guarded[e.Package]; c != nil && !c.contains(e.Version) {
					r := s.byName[s.requestedBy[e.Package]]
					v.Add(deppyresolve.Prohibited().WithMessage(fmt.Sprintf("Operator %q: bundle %s: %s", r.Name, e.Name, waitMessage(r, c, e))))
				}
			}
		}
		for _, v := range vars.All() {
			rp, ok := v.Entity.(*olm.RequiredPackage)
			if !ok || rp.Requirement.VersionRange != "" {
				continue
			}
			if c := s.guards[rp.Requirement.Name]; c != nil {
				s.waiting[rp.Requirement.Name] = s.bestWaiting(rp, installed[rp.Requirement.Package], c)
			}
		}
		return nil
	})
	return p.Insert(olm.StageBundleDependencies, stage)
}

// bestWaiting returns the upgrade the guard rails hold back: the most preferred candidate of rp that
// the installed package may move to (its upgrade edges under Enforce) and the cluster can run, when
// it is outside c and newer than the installed version; nil when that candidate is within c (what
// the Operator would choose without the guard rails, dependencies aside, is allowed anyway).
func (s *solver) bestWaiting(rp *olm.RequiredPackage, ip *olm.InstalledPackage, c *compatRange) *Waiting {
	allowed := map[*olm.Bundle]bool{}
	if ip != nil {
		for _, b := range ip.Allowed {
			allowed[b] = true
		}
	}
	for _, b := range rp.Candidates {
		if (len(allowed) > 0 && !allowed[b]) || s.cluster.CannotRun(b) != "" {
			continue
		}
		if c.contains(b.Version) || !b.Version.GT(c.from) {
			return nil
		}
		r := s.byName[rp.Requirement.Name]
		return &Waiting{Name: b.Name, Version: b.VersionString, Catalog: b.Catalog, Message: waitMessage(r, c, b)}
	}
	return nil
}

// customize reshapes deppy's pipeline for Operators: dependencies only from Operators' packages, and
// the semver guard rails.
func (s *solver) customize(p deppyresolve.Pipeline) (deppyresolve.Pipeline, error) {
	p, err := s.onlyOperatorPackages(p)
	if err != nil {
		return nil, err
	}
	return s.semverGuardRails(p)
}
