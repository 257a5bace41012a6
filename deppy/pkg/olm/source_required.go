package olm

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/olmv1/olmv1/deppy/pkg/resolve"
)

// RequiredPackage is the Entity of a required-package variable.
type RequiredPackage struct {
	Requirement Requirement
	// Candidates are the matching bundles in preference order.
	Candidates []*Bundle
}

// Stage names of the default pipeline.
const (
	StageRequiredPackages   = "required-packages"
	StageInstalledBundles   = "installed-bundles"
	StageBundleDependencies = "bundle-dependencies"
	StageUniqueness         = "uniqueness"
)

// RequiredPackages adds, per requirement, a mandatory variable that depends
// on the matching bundles (channel, version range, catalogs) in the order of
// preferred: non-deprecated bundles first, then, when the requirement names no
// channel, the bundles of the package's default channel, then the highest
// version, then the catalog with the highest priority. It also adds a variable
// for every candidate bundle.
func RequiredPackages(idx *Index, reqs []Requirement) resolve.VariableSource {
	return resolve.NewSource(StageRequiredPackages, func(_ context.Context, vars *resolve.Variables) error {
		for i := range reqs {
			req := reqs[i]
			cands, why, err := candidates(idx, req)
			if err != nil {
				return err
			}
			id := resolve.Identifier("required/" + req.Package)
			for n := 2; vars.Has(id); n++ {
				id = resolve.Identifier(fmt.Sprintf("required/%s#%d", req.Package, n))
			}
			entity := &RequiredPackage{Requirement: req, Candidates: cands}
			reason := &Reason{Kind: ReasonRequired, Requirement: &entity.Requirement, Package: req.Package, Candidates: cands, NoCandidates: why}
			v := resolve.NewVariable(id, entity,
				resolve.Mandatory().WithDetail(reason),
				reason.constraint(resolve.Dependency(ids(cands)...)))
			if err := vars.Add(v); err != nil {
				return err
			}
			if err := addBundles(vars, cands); err != nil {
				return err
			}
		}
		return nil
	})
}

// candidates returns the bundles matching a requirement in preference order,
// or, when there are none, a sentence saying why.
func candidates(idx *Index, req Requirement) ([]*Bundle, string, error) {
	constraint, err := req.versionConstraint()
	if err != nil {
		return nil, "", err
	}
	all := idx.Bundles(req.Package)
	if len(all) == 0 {
		return nil, fmt.Sprintf("no catalog has package %q (catalogs: %s)", req.Package, strings.Join(catalogNames(idx), ", ")), nil
	}
	allowed := map[string]bool{}
	for _, c := range req.Catalogs {
		allowed[c] = true
	}
	var inCatalogs, inChannel, out []*Bundle
	for _, b := range all {
		if len(allowed) > 0 && !allowed[b.Catalog] {
			continue
		}
		inCatalogs = append(inCatalogs, b)
		if chs := req.ChannelList(); len(chs) > 0 && !slices.ContainsFunc(chs, b.InChannel) {
			continue
		}
		inChannel = append(inChannel, b)
		if constraint != nil && !constraint.Check(b.mmVersion) {
			continue
		}
		out = append(out, b)
	}
	if len(out) > 0 {
		// Any named channel: no default-channel preference (the highest version wins).
		return preferred(out, strings.Join(req.ChannelList(), ",")), "", nil
	}
	switch {
	case len(inCatalogs) == 0:
		return nil, fmt.Sprintf("package %q is not in catalogs %s (it is in %s)", req.Package,
			strings.Join(quoteAll(req.Catalogs), ", "), strings.Join(quoteAll(bundleCatalogs(all)), ", ")), nil
	case len(inChannel) == 0:
		return nil, fmt.Sprintf("package %q has no channel %s (channels: %s)", req.Package, strings.Join(quoteAll(req.ChannelList()), " or "),
			strings.Join(channelNames(inCatalogs), ", ")), nil
	}
	where := ""
	if chs := req.ChannelList(); len(chs) > 0 {
		where = fmt.Sprintf(" in channel %s", strings.Join(quoteAll(chs), " or "))
	}
	return nil, fmt.Sprintf("no version of package %q%s is in range %q (available: %s)", req.Package, where, req.VersionRange, versionList(inChannel)), nil
}

// addBundles adds a variable for each bundle not yet in vars.
func addBundles(vars *resolve.Variables, bs []*Bundle) error {
	for _, b := range bs {
		if vars.Has(b.ID()) {
			continue
		}
		if err := vars.Add(resolve.NewVariable(b.ID(), b)); err != nil {
			return err
		}
	}
	return nil
}

func ids(bs []*Bundle) []resolve.Identifier {
	out := make([]resolve.Identifier, len(bs))
	for i, b := range bs {
		out[i] = b.ID()
	}
	return out
}

func catalogNames(idx *Index) []string {
	names := make([]string, 0, len(idx.catalogs))
	for _, c := range idx.catalogs {
		names = append(names, fmt.Sprintf("%q", c.Name))
	}
	return names
}

func bundleCatalogs(bs []*Bundle) []string {
	seen := map[string]bool{}
	var out []string
	for _, b := range bs {
		if !seen[b.Catalog] {
			seen[b.Catalog] = true
			out = append(out, b.Catalog)
		}
	}
	return out
}

func channelNames(bs []*Bundle) []string {
	seen := map[string]bool{}
	var out []string
	for _, b := range bs {
		for _, c := range b.Channels {
			if !seen[c] {
				seen[c] = true
				out = append(out, visible(c))
			}
		}
	}
	sort.Strings(out)
	return out
}
