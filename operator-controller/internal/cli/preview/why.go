package preview

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	mmsemver "github.com/Masterminds/semver/v3"

	"github.com/olmv1/olmv1/deppy/pkg/olm"
	"github.com/olmv1/olmv1/deppy/pkg/operators"
	operatorsv1alpha1 "github.com/olmv1/olmv1/operator-controller/api/v1alpha1"
)

// why explains a choice of resolution with the facts it was made from: what asked for the package,
// the channel and catalog the bundle comes from, the newer versions that were not chosen, and the
// upgrade edge from the installed bundle. It states what the catalogs and the Operator's spec say;
// the choice itself is deppy's (resolution prefers, in order: not deprecated, the default channel
// when no channel is named, the highest version, the catalog with the highest priority).
func why(st *State, op *operatorsv1alpha1.Operator, b *operators.Bundle, installed *operators.Installed, dependents []string) []string {
	var lines []string
	// The requirement.
	want := "any version"
	if op.Spec.Version != "" {
		want = fmt.Sprintf("version %q", op.Spec.Version)
	}
	if op.Spec.ApprovedVersion != "" {
		want += fmt.Sprintf(", approved version %s (upgradePolicy Manual)", op.Spec.ApprovedVersion)
	}
	channel := "any channel (the package's default channel first)"
	if chans := specChannels(op); len(chans) > 0 {
		channel = fmt.Sprintf("channel %q", strings.Join(chans, `", "`))
		if len(chans) > 1 {
			channel = "channels " + channel[len("channel "):]
		}
	}
	lines = append(lines, fmt.Sprintf("requirement: Operator %s asks for package %s, %s, %s", op.Name, op.Spec.PackageName, want, channel))
	if op.Spec.Paused {
		lines = append(lines, "requirement: spec.paused keeps the Operator on its installed bundle")
	}
	for _, d := range dependents {
		lines = append(lines, "requirement: "+d)
	}

	ib := st.idx.Bundle(b.Catalog, b.Package, b.Name)
	// The channel.
	if ib != nil {
		def := ""
		for _, pi := range st.idx.PackageInfo(b.Package) {
			if pi.Catalog == b.Catalog {
				def = pi.DefaultChannel
			}
		}
		var chans []string
		for _, c := range ib.Channels {
			if c == def {
				c += " (the default channel)"
			}
			chans = append(chans, c)
		}
		lines = append(lines, "channel: "+strings.Join(chans, ", "))
	}
	// The version: the newer versions the catalogs offer that were not chosen, and the obvious reason.
	lines = append(lines, "version: "+versionReason(st.idx, op, b))
	// The catalog.
	cat := fmt.Sprintf("catalog: %s (priority %d)", b.Catalog, catalogPriority(st, b.Catalog))
	var also []string
	for _, other := range st.idx.Bundles(b.Package) {
		if other.Catalog != b.Catalog && other.Name == b.Name {
			also = append(also, fmt.Sprintf("%s (priority %d)", other.Catalog, other.CatalogPriority))
		}
	}
	if len(also) > 0 {
		cat += "; also offered by " + strings.Join(also, ", ")
	}
	if op.Spec.CatalogSelector != nil {
		cat += "; catalogs selected by spec.catalogSelector"
	}
	lines = append(lines, cat)
	// The upgrade edge.
	if installed != nil && installed.BundleName != b.Name {
		lines = append(lines, "upgrade: "+edgeReason(op, ib, installed))
	}
	for _, d := range []string{b.PackageDeprecation, b.ChannelDeprecation, b.BundleDeprecation} {
		if d != "" {
			lines = append(lines, "deprecated: "+d)
		}
	}
	return lines
}

// versionReason says whether the chosen version is the newest the catalogs offer for the package,
// and why newer ones were passed over when the Operator's spec says it.
func versionReason(idx *olm.Index, op *operatorsv1alpha1.Operator, b *operators.Bundle) string {
	chosen, err := mmsemver.NewVersion(b.Version)
	if err != nil {
		return b.Version
	}
	var rng *mmsemver.Constraints
	if op.Spec.Version != "" {
		rng, _ = mmsemver.NewConstraint(op.Spec.Version)
	}
	chans := specChannels(op)
	newer := map[string][]string{} // version → why it was passed over
	for _, other := range idx.Bundles(b.Package) {
		v, err := mmsemver.NewVersion(other.VersionString)
		if err != nil || !v.GreaterThan(chosen) {
			continue
		}
		reason := ""
		switch {
		case rng != nil && !rng.Check(v):
			reason = "outside spec.version"
		case len(chans) > 0 && !slices.ContainsFunc(chans, func(c string) bool { return slices.Contains(other.Channels, c) }):
			reason = "not in " + strings.Join(chans, " or ")
		case other.Deprecated():
			reason = "deprecated"
		case len(chans) == 0 && !other.InDefaultChannel():
			reason = "not in the default channel"
		}
		vs := other.VersionString
		if _, ok := newer[vs]; !ok {
			newer[vs] = nil
		}
		if reason != "" && !slices.Contains(newer[vs], reason) {
			newer[vs] = append(newer[vs], reason)
		}
	}
	if len(newer) == 0 {
		return b.Version + ", the newest version of the package in the catalogs"
	}
	versions := sortedKeys(newer)
	sort.Slice(versions, func(i, j int) bool {
		vi, _ := mmsemver.NewVersion(versions[i])
		vj, _ := mmsemver.NewVersion(versions[j])
		return vi.GreaterThan(vj)
	})
	var parts []string
	for _, v := range versions {
		r := "not chosen by resolution: upgrade edges, dependencies or other Operators rule it out"
		if len(newer[v]) > 0 {
			r = strings.Join(newer[v], ", ")
		}
		parts = append(parts, fmt.Sprintf("%s (%s)", v, r))
	}
	return fmt.Sprintf("%s; newer in the catalogs: %s", b.Version, strings.Join(parts, "; "))
}

// edgeReason names the catalog's upgrade edge from the installed bundle to ib, or why none is needed.
func edgeReason(op *operatorsv1alpha1.Operator, ib *olm.Bundle, installed *operators.Installed) string {
	from := fmt.Sprintf("from %s (%s)", installed.BundleName, installed.Version)
	if op.Spec.UpgradeConstraintPolicy == operatorsv1alpha1.UpgradeConstraintPolicyIgnore {
		return from + ": upgradeConstraintPolicy Ignore, no upgrade edge needed"
	}
	if ib == nil {
		return from
	}
	var edges []string
	for _, e := range ib.Edges {
		switch {
		case e.Replaces == installed.BundleName:
			edges = append(edges, fmt.Sprintf("replaces %s in channel %s", e.Replaces, e.Channel))
		case slices.Contains(e.Skips, installed.BundleName):
			edges = append(edges, fmt.Sprintf("skips %s in channel %s", installed.BundleName, e.Channel))
		case e.SkipRange != "":
			edges = append(edges, fmt.Sprintf("skipRange %q in channel %s", e.SkipRange, e.Channel))
		}
	}
	if len(edges) == 0 {
		return from + " (upgradeConstraintPolicy Enforce)"
	}
	return from + ": the catalog's upgrade edge " + strings.Join(edges, "; ")
}

// changeOf says what happens to the installed bundle.
func changeOf(installed *operators.Installed, b *operators.Bundle) string {
	switch {
	case installed == nil:
		return "install"
	case installed.BundleName == b.Name:
		return "unchanged"
	}
	iv, err1 := mmsemver.NewVersion(installed.Version)
	bv, err2 := mmsemver.NewVersion(b.Version)
	switch {
	case err1 != nil || err2 != nil:
		return "upgrade"
	case bv.GreaterThan(iv):
		return "upgrade"
	case bv.LessThan(iv):
		return "downgrade"
	}
	return "reinstall"
}

func catalogPriority(st *State, name string) int32 {
	for i := range st.cats {
		if st.cats[i].Name == name {
			return st.cats[i].Spec.Priority
		}
	}
	return 0
}

// specChannels are the channels the Operator restricts resolution to (spec.channel or spec.channels;
// none means any channel).
func specChannels(op *operatorsv1alpha1.Operator) []string {
	if op.Spec.Channel != "" {
		return []string{op.Spec.Channel}
	}
	return op.Spec.Channels
}
