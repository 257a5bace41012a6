package olm

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/blang/semver/v4"

	"github.com/olmv1/olmv1/deppy/pkg/resolve"
)

// InstalledPackage is the Entity of an installed-package variable.
type InstalledPackage struct {
	Installed InstalledBundle
	// Policy is the upgrade policy in force for the package.
	Policy UpgradePolicy
	// Required is true when a Requirement names the package.
	Required bool
	// Current is the installed bundle as found in the catalogs (one per
	// catalog), or a stand-in when no catalog has it.
	Current []*Bundle
	// Allowed is what the package may become, in preference order; empty
	// when the package is required with policy Ignore (the requirement decides).
	Allowed []*Bundle
}

func (p *InstalledPackage) label() string {
	return fmt.Sprintf("package %q %s", p.Installed.Package, p.Current[0].VersionString)
}

// phrase says what the installed state demands; others are the bundles a
// competing constraint wants instead, used to pick the clearest words.
func (p *InstalledPackage) phrase(others []*Bundle) string {
	if p.Policy == Ignore {
		return p.label() + " is installed and must stay installed"
	}
	successors := p.successors()
	if len(others) > 0 {
		older := true
		for _, b := range others {
			if compareVersions(b, p.Current[0]) >= 0 {
				older = false
				break
			}
		}
		if older {
			return p.label() + " is installed and may not be downgraded"
		}
	}
	if len(successors) == 0 {
		return p.label() + " is installed and no upgrade edge of the catalogs leads from it"
	}
	return fmt.Sprintf("%s is installed and may only be upgraded along the catalogs' upgrade edges (to %s)", p.label(), versionList(successors))
}

func (p *InstalledPackage) message() string {
	name := visible(p.Current[0].Name)
	if p.Policy == Ignore {
		return fmt.Sprintf("%s (bundle %s) is installed and must stay installed; upgrade policy Ignore allows any of: %s", p.label(), name, bundleList(p.Allowed))
	}
	return fmt.Sprintf("%s (bundle %s) is installed; upgrade policy Enforce allows only it or a bundle that replaces it, skips it or has it in skipRange: %s", p.label(), name, bundleList(p.Allowed))
}

// successors returns the allowed bundles other than the installed one.
func (p *InstalledPackage) successors() []*Bundle {
	var out []*Bundle
	for _, b := range p.Allowed {
		if !p.isCurrent(b) {
			out = append(out, b)
		}
	}
	return out
}

func (p *InstalledPackage) isCurrent(b *Bundle) bool {
	for _, c := range p.Current {
		if c == b {
			return true
		}
	}
	return false
}

// InstalledBundles adds, per installed package, a mandatory variable that
// depends on what the package may become: under Enforce the installed bundle
// or one of its direct successors (replaces, skips, skipRange), under Ignore
// any bundle of the package. A package nobody requires prefers to stay as it
// is. An installed package that is required with policy Ignore is left to its
// requirement alone.
func InstalledBundles(idx *Index, installed []InstalledBundle, reqs []Requirement) resolve.VariableSource {
	return resolve.NewSource(StageInstalledBundles, func(_ context.Context, vars *resolve.Variables) error {
		seen := map[string]bool{}
		for _, ib := range installed {
			if seen[ib.Package] {
				return fmt.Errorf("package %q is listed as installed twice", ib.Package)
			}
			seen[ib.Package] = true
			p, err := installedPackage(idx, ib, reqs)
			if err != nil {
				return err
			}
			id := resolve.Identifier("installed/" + ib.Package)
			if p.Allowed == nil {
				// Required with policy Ignore: recorded (for the result), unconstrained.
				if err := vars.Add(resolve.NewVariable(id, p)); err != nil {
					return err
				}
				continue
			}
			reason := &Reason{Kind: ReasonInstalled, Installed: p, Package: ib.Package, Candidates: p.Allowed}
			v := resolve.NewVariable(id, p,
				resolve.Mandatory().WithDetail(reason),
				reason.constraint(resolve.Dependency(ids(p.Allowed)...)))
			if err := vars.Add(v); err != nil {
				return err
			}
			if err := addBundles(vars, p.Allowed); err != nil {
				return err
			}
		}
		return nil
	})
}

func installedPackage(idx *Index, ib InstalledBundle, reqs []Requirement) (*InstalledPackage, error) {
	v, err := semver.ParseTolerant(ib.Version)
	if err != nil {
		return nil, fmt.Errorf("installed package %q: invalid version %q: %w", ib.Package, ib.Version, err)
	}
	p := &InstalledPackage{Installed: ib, Policy: ib.UpgradePolicy}
	var req *Requirement
	for i := range reqs {
		if reqs[i].Package == ib.Package {
			req = &reqs[i]
			p.Required = true
			p.Policy = req.UpgradePolicy
			break
		}
	}
	if p.Policy == "" {
		p.Policy = Enforce
	}
	all := idx.Bundles(ib.Package)
	for _, b := range all {
		if (ib.BundleName != "" && b.Name == ib.BundleName) || (ib.BundleName == "" && b.Version.Equals(v)) {
			p.Current = append(p.Current, b)
		}
	}
	name := ib.BundleName
	if len(p.Current) > 0 {
		name = p.Current[0].Name
	} else {
		// Not in any catalog: a stand-in keeps the package (and its version) in the problem.
		if name == "" {
			name = ib.Package + ".v" + v.String()
		}
		p.Current = []*Bundle{{Package: ib.Package, Name: name, Version: v, VersionString: v.String(),
			id: resolve.Identifier("installed-bundle/" + ib.Package + "/" + name)}}
	}
	if p.Required && p.Policy == Ignore {
		return p, nil // the requirement alone decides; Allowed stays empty
	}
	var channels []string
	if req != nil {
		channels = req.ChannelList()
	}
	var allowed []*Bundle
	if p.Policy == Ignore {
		allowed = all
	} else {
		for _, b := range all {
			if !p.isCurrent(b) && upgradesFrom(b, name, &v, channels) {
				allowed = append(allowed, b)
			}
		}
	}
	if p.Required {
		// The requirement orders the choice; keep the same preference here.
		p.Allowed = preferred(append(append([]*Bundle{}, p.Current...), without(allowed, p.Current)...), strings.Join(channels, ","))
	} else {
		// Nobody asked for a change: stay if possible.
		p.Allowed = append(append([]*Bundle{}, p.Current...), preferred(without(allowed, p.Current), "")...)
	}
	return p, nil
}

// upgradesFrom reports whether b has an upgrade edge (in one of channels, or in
// any channel when there are none) from the bundle called name at version v.
func upgradesFrom(b *Bundle, name string, v *semver.Version, channels []string) bool {
	for _, e := range b.Edges {
		if len(channels) > 0 && !slices.Contains(channels, e.Channel) {
			continue
		}
		if e.upgrades(name, v) {
			return true
		}
	}
	return false
}

func without(bs, drop []*Bundle) []*Bundle {
	out := make([]*Bundle, 0, len(bs))
	for _, b := range bs {
		keep := true
		for _, d := range drop {
			if b == d {
				keep = false
				break
			}
		}
		if keep {
			out = append(out, b)
		}
	}
	return out
}
