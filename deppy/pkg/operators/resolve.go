// Package operators is the resolution core of operator-controller (and of `deppy resolve
// --kubeconfig`): it turns every Operator's request, the bundles its BundleDeployments install and
// the catalogs' content into one deppy OLM problem and returns, per Operator, the bundle to install
// or why there is none. It is pure: every input is passed in, nothing is read from a cluster.
//
// Which bundle is preferred (non-deprecated, then the default channel when an Operator names no
// channel, then the highest version, then catalog priority) is decided by deppy's olm package
// alone; nothing here reorders candidates or sets a channel the Operator did not name, so
// `deppy resolve` over the same catalogs and requests chooses the same bundles. Two rules are added
// to deppy's pipeline, both as stages that prohibit bundles with a message: dependencies come only
// from packages Operators install (bundle.go), and an installed Operator upgrades by itself only
// within its version's semver-compatible range (the semver guard rails, semver.go).
package operators

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"unicode/utf8"

	mmsemver "github.com/Masterminds/semver/v3"

	"github.com/olmv1/olmv1/deppy/pkg/olm"
	deppyresolve "github.com/olmv1/olmv1/deppy/pkg/resolve"
)

// Request is what one Operator asks for.
type Request struct {
	// Name is the Operator's name.
	Name string
	// Package is spec.packageName.
	Package string
	// VersionRange is spec.version (Masterminds syntax; empty for any version).
	VersionRange string
	// Channel is spec.channel. Empty means any channel, the package's default channel first: the
	// preference is deppy's (olm.RequiredPackages), the same code `deppy resolve` runs, so both
	// choose the same bundle.
	Channel string
	// Channels is spec.channels: bundles of any of them, upgrade edges followed within them (the
	// highest version wins; no default-channel preference).
	Channels []string
	// Catalogs are the names of the Catalogs spec.catalogSelector selects; nil means every catalog.
	// A non-nil empty list means the selector matches no catalog.
	Catalogs []string
	// ConstraintPolicy is spec.upgradeConstraintPolicy (empty means Enforce).
	ConstraintPolicy olm.UpgradePolicy
	// InstallDependencies is true for spec.dependencyPolicy Install: the bundle's dependencies may
	// come from packages no request names (an Operator is then created for each); otherwise only
	// from packages that requests name or that are installed.
	InstallDependencies bool
	// AnyVersion is true for spec.upgradeScope AnyVersion: automatic upgrades follow every upgrade the
	// catalogs offer. Otherwise an installed Operator without VersionRange or ApprovedVersion
	// upgrades by itself only within its version's semver-compatible range (semver.go).
	AnyVersion bool
	// Manual is true for spec.upgradePolicy Manual.
	Manual bool
	// ApprovedVersion is spec.approvedVersion (Manual only).
	ApprovedVersion string
	// Installed is the bundle the Operator's BundleDeployment references, nil when there is none.
	Installed *Installed
	// Order ranks requests by age (e.g. creation time in Unix nanoseconds): when two requests
	// cannot be satisfied together, the newer one (higher Order) gives way.
	Order int64
}

// Installed is the bundle an Operator's BundleDeployment references.
type Installed struct {
	BundleName string
	Version    string
}

// Outcome is the result of resolution for one Operator.
type Outcome struct {
	// Bundle is the bundle to install; nil when resolution failed.
	Bundle *Bundle
	// Message says, when Bundle is nil, why no bundle could be chosen, naming the package, the
	// constraint and the candidates that failed.
	Message string
	// UpgradeAvailable (Manual upgrade policy only) is the bundle resolution would move to if the
	// upgrade were approved; nil when the Operator is up to date.
	UpgradeAvailable *Bundle
	// Waiting is the upgrade the catalogs offer that the semver guard rails hold back (a newer
	// major, or minor in 0.x), and why; nil when there is none.
	Waiting *Waiting
	// Skipped names each bundle of the Operator's package, among those it asks for, that the
	// cluster cannot run (Options.Cluster), and why: "bundle foo.v2.0.0 skipped: needs
	// Kubernetes >= 1.40.0 (minKubeVersion), the cluster runs 1.37.2".
	Skipped []string
}

// Options are the inputs of resolution besides the catalogs and the requests.
type Options struct {
	// Cluster is the cluster's version (nil or zero: unknown, and bundles' minKubeVersion and
	// olm.maxOpenShiftVersion are not checked). A bundle the cluster cannot run is not a
	// candidate, unless it is the installed one.
	Cluster *olm.Cluster
}

// Resolve resolves every request together against idx and returns an Outcome per request name.
// Requests that cannot be satisfied give way (newest first) so that the others still resolve; a
// request that gives way keeps its installed bundle in the problem, so nothing else may displace it.
func Resolve(ctx context.Context, idx *olm.Index, reqs []Request) map[string]Outcome {
	return ResolveWith(ctx, idx, reqs, Options{})
}

// ResolveWith is Resolve with opts: with a known opts.Cluster, the bundles the cluster cannot run
// are skipped, and each Outcome names those of its package (Outcome.Skipped); when none of the
// Operator's candidates is left, its message says so and what to do.
func ResolveWith(ctx context.Context, idx *olm.Index, reqs []Request, opts Options) map[string]Outcome {
	if err := opts.Cluster.Validate(); err != nil {
		// An unreadable version checks nothing rather than stopping every Operator.
		opts.Cluster = nil
	}
	out := make(map[string]Outcome, len(reqs))
	sorted := append([]Request(nil), reqs...)
	sortRequests(sorted)

	s := &solver{idx: idx, cluster: opts.Cluster, installed: installedBundles(sorted), requestedBy: map[string]string{}, invalid: map[string]cause{}}
	var active []Request
	owner := s.requestedBy
	for _, r := range sorted {
		if first, dup := owner[r.Package]; dup {
			out[r.Name] = Outcome{Message: fmt.Sprintf("package %q is already requested by Operator %q: only one Operator may install a package", r.Package, first)}
			continue
		}
		owner[r.Package] = r.Name
		if msg := validate(r); msg != "" {
			out[r.Name] = Outcome{Message: msg}
			s.invalid[r.Package] = cause{op: r.Name, text: msg}
			continue
		}
		active = append(active, r)
	}
	s.guard = newGuardRails(active, opts.Cluster, operatorHint)

	// Manual upgrades: first find what every Operator would move to, then keep the Manual ones on
	// their installed (or approved) version.
	available := map[string]*Bundle{}
	pinned := append([]Request(nil), active...)
	anyManual := false
	for _, r := range active {
		if r.Manual && r.Installed != nil {
			anyManual = true
		}
	}
	if anyManual {
		probe, _ := s.solve(ctx, active)
		for i, r := range pinned {
			if !r.Manual || r.Installed == nil {
				continue
			}
			if b := probe[r.Name]; b != nil && b.Version != r.Installed.Version {
				available[r.Name] = b
			}
			if pin := manualPin(r); pin != "" {
				pinned[i].VersionRange = pin
			}
		}
	}

	bundles, failures := s.solve(ctx, pinned)
	for _, r := range pinned {
		skipped, total := opts.Cluster.Skipped(idx, requirement(r), s.installed)
		if msg, failed := failures[r.Name]; failed {
			if len(skipped) > 0 && len(skipped) == total {
				msg = fmt.Sprintf("no bundle of package %q that Operator %q may install can run on this cluster", r.Package, r.Name)
			}
			out[r.Name] = Outcome{Message: msg + skippedNote(r, skipped), Skipped: skipped, Waiting: s.guard.Waiting(r.Package)}
			continue
		}
		o := Outcome{Bundle: bundles[r.Name], Skipped: skipped, Waiting: s.guard.Waiting(r.Package)}
		if a := available[r.Name]; a != nil && (o.Bundle == nil || a.Version != o.Bundle.Version) {
			o.UpgradeAvailable = a
		}
		out[r.Name] = o
	}
	return out
}

// sortRequests puts requests in resolution order, oldest first (by Order, then name): the order of
// the problem's requirements, which is also the order in which their preferences are honoured.
func sortRequests(reqs []Request) {
	sort.SliceStable(reqs, func(i, j int) bool {
		if reqs[i].Order != reqs[j].Order {
			return reqs[i].Order < reqs[j].Order
		}
		return reqs[i].Name < reqs[j].Name
	})
}

// manualPin returns the exact version a Manual request must stay on: the approved version when one
// is set, else the installed version. It returns "" when the installed version no longer satisfies
// spec.version: a person changed the spec, and that change is the approval.
func manualPin(r Request) string {
	if r.ApprovedVersion != "" {
		return strings.TrimPrefix(r.ApprovedVersion, "v")
	}
	if r.VersionRange != "" {
		c, err := mmsemver.NewConstraint(r.VersionRange)
		v, verr := mmsemver.NewVersion(r.Installed.Version)
		if err == nil && verr == nil && !c.Check(v) {
			return ""
		}
	}
	return r.Installed.Version
}

// validate returns a message when the request is malformed on its own.
func validate(r Request) string {
	if r.VersionRange != "" {
		if _, err := mmsemver.NewConstraint(r.VersionRange); err != nil {
			return fmt.Sprintf("spec.version %q is not a valid semver range: %v (examples: \"1.2.3\", \">=1.2.0 <2.0.0\", \"~1.4\")", r.VersionRange, err)
		}
	}
	if r.Catalogs != nil && len(r.Catalogs) == 0 {
		return fmt.Sprintf("spec.catalogSelector matches no serving Catalog, so package %q has no candidates (check the selector and `kubectl get catalogs --show-labels`)", r.Package)
	}
	return ""
}

// installedBundles lists the installed bundle of every request (one per package, oldest request first).
func installedBundles(reqs []Request) []olm.InstalledBundle {
	var out []olm.InstalledBundle
	seen := map[string]bool{}
	for _, r := range reqs {
		if r.Installed == nil || seen[r.Package] {
			continue
		}
		seen[r.Package] = true
		out = append(out, olm.InstalledBundle{
			Package: r.Package, Version: r.Installed.Version, BundleName: r.Installed.BundleName,
			UpgradePolicy: policy(r.ConstraintPolicy),
		})
	}
	return out
}

func policy(p olm.UpgradePolicy) olm.UpgradePolicy {
	if p == "" {
		return olm.Enforce
	}
	return p
}

type solver struct {
	idx       *olm.Index
	cluster   *olm.Cluster
	installed []olm.InstalledBundle
	// allowed are the packages bundles may come from in the current solve.
	allowed map[string]bool
	// installDeps are the requests (by name) of the current solve whose dependencies may come from
	// any package (InstallDependencies).
	installDeps map[string]bool
	// missingFor lists, per request of the current solve, the packages no Operator installs that
	// its candidate bundles depend on (set by the StageOperatorPackagesOnly stage).
	missingFor map[string][]string
	// requestedBy names, per package, the Operator that asks for it, whether or not that
	// Operator can be resolved: a dependency on a package whose Operator gave way is explained
	// as such, not as a missing Operator.
	requestedBy map[string]string
	// invalid holds, per package, why its Operator's request is malformed (see validate).
	invalid map[string]cause
	// why holds, per package whose Operator gave way in the current solve (or is invalid), the
	// first cause of that failure. It is passed along: when an Operator fails because the
	// Operator of its dependency gave way, it takes that Operator's cause, so that a chain of
	// Operators (a dependency cycle among them, say) all name the requirement that fails.
	why map[string]cause
	// guard is the semver guard rails of the requests as asked (before Manual pins; semver.go).
	guard *GuardRails
}

// cause is the first cause of an Operator's failure, and the Operator it comes from.
type cause struct {
	op, text string
}

// gaveWay is the Detail of the constraint that keeps a package whose Operator gave way out of
// a solve.
type gaveWay struct{ pkg string }

// rootCause returns the first cause of the conflict that made Operator op give way: that of the
// Operator whose giving way caused it, else the explainer's first sentence, else the first
// constraint that fails by itself.
func (s *solver) rootCause(op string, ns *deppyresolve.NotSatisfiableError) cause {
	for _, c := range ns.Causes {
		if g, ok := c.Constraint.Detail.(gaveWay); ok && s.why[g.pkg].text != "" {
			return s.why[g.pkg]
		}
	}
	if len(ns.Summary) > 0 {
		return cause{op: op, text: ns.Summary[0]}
	}
	if first, _ := ns.Shortlist(1, nil); len(first) > 0 {
		return cause{op: op, text: first[0]}
	}
	return cause{}
}

// solve resolves reqs together. When they cannot be satisfied, the newest request among those named
// by the conflict gives way (its failure message is recorded) and the rest are solved again.
func (s *solver) solve(ctx context.Context, reqs []Request) (map[string]*Bundle, map[string]string) {
	failures := map[string]string{}
	remaining := append([]Request(nil), reqs...)
	s.why = make(map[string]cause, len(s.invalid))
	for pkg, c := range s.invalid {
		s.why[pkg] = c
	}
	for {
		// Dependencies may only come from packages that an Operator being resolved asks for, or that
		// are installed (an Operator that gives way keeps its installed bundle, nothing more).
		s.allowed = map[string]bool{}
		s.installDeps = map[string]bool{}
		for _, ib := range s.installed {
			s.allowed[ib.Package] = true
		}
		problem := olm.Problem{Installed: s.installed, Cluster: s.cluster}
		for _, r := range remaining {
			s.allowed[r.Package] = true
			if r.InstallDependencies {
				s.installDeps[r.Name] = true
			}
			problem.Requirements = append(problem.Requirements, requirement(r))
		}
		res, err := (&olm.Resolver{Index: s.idx, Customize: s.customize}).Resolve(ctx, problem)
		if err == nil {
			bundles := map[string]*Bundle{}
			for _, r := range remaining {
				if sel := res.Package(r.Package); sel != nil {
					b := newBundle(s.idx, r, sel)
					b.Dependencies = dependencies(sel, s.requestedBy)
					bundles[r.Name] = b
				}
			}
			return bundles, failures
		}
		var ns *deppyresolve.NotSatisfiableError
		if !errors.As(err, &ns) {
			for _, r := range remaining {
				failures[r.Name] = fmt.Sprintf("resolution failed: %v", err)
			}
			return nil, failures
		}
		culprit := newestImplicated(ns, remaining)
		msg := explain(ns)
		if culprit < 0 {
			// Nothing requested takes part in the conflict (installed bundles alone conflict):
			// no request can be honoured.
			for _, r := range remaining {
				failures[r.Name] = msg
			}
			return nil, failures
		}
		failures[remaining[culprit].Name] = msg + missingDependencies(s.missingFor[remaining[culprit].Name], remaining[culprit].InstallDependencies)
		s.why[remaining[culprit].Package] = s.rootCause(remaining[culprit].Name, ns)
		remaining = append(remaining[:culprit:culprit], remaining[culprit+1:]...)
		if len(remaining) == 0 {
			return nil, failures
		}
	}
}

// requirement is r as deppy's olm package reads it.
func requirement(r Request) olm.Requirement {
	return olm.Requirement{
		Name: r.Name, Package: r.Package, VersionRange: r.VersionRange, Channel: r.Channel, Channels: r.Channels,
		Catalogs: r.Catalogs, UpgradePolicy: policy(r.ConstraintPolicy),
	}
}

// maxListedSkips bounds the skipped bundles a failure message names.
const maxListedSkips = 5

// skippedNote is the end of r's failure message when some of its candidates were skipped because
// the cluster cannot run them: which ones, and what to do.
func skippedNote(r Request, skipped []string) string {
	if len(skipped) == 0 {
		return ""
	}
	listed := skipped
	more := ""
	if len(listed) > maxListedSkips {
		listed, more = listed[:maxListedSkips], fmt.Sprintf("; and %d more", len(skipped)-maxListedSkips)
	}
	return fmt.Sprintf(". The cluster cannot run %d %s of package %q that would be candidates: %s%s. "+
		"Upgrade the cluster, or pin a version this cluster supports with spec.version",
		len(skipped), plural(len(skipped), "bundle", "bundles"), r.Package, strings.Join(listed, "; "), more)
}

// newestImplicated returns the index in reqs (sorted oldest first) of the newest request whose
// requirement takes part in the conflict, or -1.
func newestImplicated(ns *deppyresolve.NotSatisfiableError, reqs []Request) int {
	named := map[string]bool{}
	for _, c := range ns.Causes {
		if rp, ok := c.Subject.Entity.(*olm.RequiredPackage); ok {
			named[rp.Requirement.Name] = true
		}
	}
	for i := len(reqs) - 1; i >= 0; i-- {
		if named[reqs[i].Name] {
			return i
		}
	}
	return -1
}

// Bounds of a resolution message. It becomes the message of the Operator's Resolved condition,
// which the API server caps at 32768 bytes; a conflict among many bundles (a long dependency
// cycle, a package with hundreds of versions) can name thousands of constraints, so the message
// lists maxListedCauses of them and counts the rest, and is cut at maxMessageBytes. `deppy
// resolve` over the same catalogs prints every constraint.
const (
	maxListedCauses = 12
	maxMessageBytes = 16 << 10
)

// explain renders a conflict as one message: the explainer's summary, then the conflicting
// constraints it does not already say, in problem order (the requirement first). When there are
// more than maxListedCauses, those where resolution fails are kept over the links of a
// dependency chain, and the rest are counted.
func explain(ns *deppyresolve.NotSatisfiableError) string {
	lines := append([]string(nil), ns.Summary...)
	seen := map[string]bool{}
	for _, l := range lines {
		seen[l] = true
	}
	causes, more := ns.Shortlist(maxListedCauses, func(r string) bool { return seen[r] })
	if more > 0 {
		causes = append(causes, fmt.Sprintf("and %d more", more))
	}
	msg := strings.Join(lines, "; ")
	if len(causes) > 0 {
		if msg != "" {
			msg += ". Conflicting constraints: "
		}
		msg += strings.Join(causes, "; ")
	}
	return truncate("no bundle satisfies every constraint: "+msg, maxMessageBytes)
}

// truncate cuts s to at most max bytes on a rune boundary, saying so.
func truncate(s string, max int) string {
	const cut = " … (message truncated)"
	if len(s) <= max {
		return s
	}
	end := max - len(cut)
	for end > 0 && !utf8.RuneStart(s[end]) {
		end--
	}
	return s[:end] + cut
}

// missingDependencies is the end of a failure message naming every package that no Operator
// installs and that the request's candidate bundles need: the conflict explained names only one.
func missingDependencies(pkgs []string, install bool) string {
	if len(pkgs) == 0 || install {
		return ""
	}
	quoted := make([]string, len(pkgs))
	for i, p := range pkgs {
		quoted[i] = fmt.Sprintf("%q", p)
	}
	return fmt.Sprintf(". Packages its bundles need that no Operator installs: %s; create an Operator for each (packageName), or set spec.dependencyPolicy: Install to have them created",
		strings.Join(quoted, ", "))
}
