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

// GuardRails applies the semver guard rails to a set of requests: the StageSemverGuardRails stage
// (Stage) and, after a solve, the upgrade that waits for each guarded request (Waiting).
// operator-controller's resolution (ResolveWith) uses one per resolution; `deppy resolve` uses one
// for its --require/--installed problem (ProblemGuardRails).
type GuardRails struct {
	// byPackage holds, per package, the guarded request and its compatible range.
	byPackage map[string]guarded
	cluster   *olm.Cluster
	// hint says how to take a waiting upgrade b of request r ("set spec.version …").
	hint func(r Request, b *olm.Bundle) string
	// waiting holds, per package, the upgrade the guard rails hold back.
	waiting map[string]*Waiting
}

type guarded struct {
	req Request
	rng *compatRange
}

// newGuardRails guards every request of reqs that guardOf guards; cluster excludes the bundles it
// cannot run from the waiting upgrades.
func newGuardRails(reqs []Request, cluster *olm.Cluster, hint func(Request, *olm.Bundle) string) *GuardRails {
	g := &GuardRails{byPackage: map[string]guarded{}, cluster: cluster, hint: hint, waiting: map[string]*Waiting{}}
	for _, r := range reqs {
		if c := guardOf(r); c != nil {
			g.byPackage[r.Package] = guarded{req: r, rng: c}
		}
	}
	return g
}

// operatorHint is how an Operator takes a waiting upgrade.
func operatorHint(r Request, b *olm.Bundle) string {
	take := fmt.Sprintf("set spec.version to a range that includes it, e.g. %q, or spec.upgradeScope: AnyVersion to follow every upgrade the catalogs offer", suggestedRange(b.Version))
	if r.Manual {
		take = fmt.Sprintf("approve it with spec.approvedVersion: %q, ", b.VersionString) + take
	}
	return take
}

// ProblemGuardRails is the semver guard rails of `deppy resolve --require … --installed …`: a
// requirement without a version range whose package is installed upgrades only within the
// installed version's compatible range. Pass Customize to olm.Resolver and read Waiting after.
func ProblemGuardRails(p olm.Problem) *GuardRails {
	var reqs []Request
	for _, rq := range p.Requirements {
		for _, ib := range p.Installed {
			if ib.Package == rq.Package {
				reqs = append(reqs, Request{Name: rq.Name, Package: rq.Package, VersionRange: rq.VersionRange,
					Installed: &Installed{BundleName: ib.BundleName, Version: ib.Version}})
				break
			}
		}
	}
	return newGuardRails(reqs, p.Cluster, func(r Request, b *olm.Bundle) string {
		return fmt.Sprintf("require it with a range, e.g. --require '%s@%s', or pass --upgrade-scope AnyVersion to follow every upgrade the catalogs offer", r.Package, suggestedRange(b.Version))
	})
}

// Customize inserts Stage after bundle dependencies (for olm.Resolver.Customize).
func (g *GuardRails) Customize(p deppyresolve.Pipeline) (deppyresolve.Pipeline, error) {
	return p.Insert(olm.StageBundleDependencies, g.Stage())
}

// Waiting returns the upgrade the guard rails held back for package pkg in the last solve, nil when
// there is none (or g is nil).
func (g *GuardRails) Waiting(pkg string) *Waiting {
	if g == nil {
		return nil
	}
	return g.waiting[pkg]
}

// message says why b waits for r and how to take it.
func (g *GuardRails) message(r Request, c *compatRange, b *olm.Bundle) string {
	return fmt.Sprintf("%s is available but waits: %s (%s)", b.VersionString, c.scope(), g.hint(r, b))
}

// Stage is the StageSemverGuardRails stage, to run after bundle dependencies: every bundle of a
// guarded package outside its compatible range is prohibited. It also records, per guarded
// requirement that is not pinned (a Manual Operator pinned to its installed version keeps what the
// unpinned solve found), the upgrade that waits.
func (g *GuardRails) Stage() deppyresolve.VariableSource {
	return deppyresolve.NewSource(StageSemverGuardRails, func(_ context.Context, vars *deppyresolve.Variables) error {
		if len(g.byPackage) == 0 {
			return nil
		}
		installed := map[string]*olm.InstalledPackage{}
		for _, v := range vars.All() {
			switch e := v.Entity.(type) {
			case *olm.InstalledPackage:
				installed[e.Installed.Package] = e
			case *olm.Bundle:
				if gd, ok := g.byPackage[e.Package]; ok && !gd.rng.contains(e.Version) {
					v.Add(deppyresolve.Prohibited().WithMessage(fmt.Sprintf("%s: bundle %s: %s", who(gd.req), e.Name, g.message(gd.req, gd.rng, e))))
				}
			}
		}
		for _, v := range vars.All() {
			rp, ok := v.Entity.(*olm.RequiredPackage)
			if !ok || rp.Requirement.VersionRange != "" {
				continue
			}
			if gd, ok := g.byPackage[rp.Requirement.Package]; ok {
				g.waiting[rp.Requirement.Package] = g.bestWaiting(rp, installed[rp.Requirement.Package], gd)
			}
		}
		return nil
	})
}

// who names the requester in a message: the Operator, or the package of a `deppy resolve` requirement.
func who(r Request) string {
	if r.Name == "" || r.Name == r.Package {
		return fmt.Sprintf("package %q", r.Package)
	}
	return fmt.Sprintf("Operator %q", r.Name)
}

// bestWaiting returns the upgrade the guard rails hold back: the most preferred candidate of rp that
// the installed package may move to (its upgrade edges under Enforce) and the cluster can run, when
// it is outside the range and newer than the installed version; nil when that candidate is within
// the range (what would be chosen without the guard rails, dependencies aside, is allowed anyway).
func (g *GuardRails) bestWaiting(rp *olm.RequiredPackage, ip *olm.InstalledPackage, gd guarded) *Waiting {
	allowed := map[*olm.Bundle]bool{}
	if ip != nil {
		for _, b := range ip.Allowed {
			allowed[b] = true
		}
	}
	for _, b := range rp.Candidates {
		if (len(allowed) > 0 && !allowed[b]) || g.cluster.CannotRun(b) != "" {
			continue
		}
		if gd.rng.contains(b.Version) || !b.Version.GT(gd.rng.from) {
			return nil
		}
		return &Waiting{Name: b.Name, Version: b.VersionString, Catalog: b.Catalog, Message: g.message(gd.req, gd.rng, b)}
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
	return s.guard.Customize(p)
}
