package olm

import "sort"

// preferred returns bs in the order resolution prefers them; it is the one
// place that order is decided, for required packages, installed packages and
// dependencies alike (the solver takes the first candidate that fits):
//
//  1. bundles that are not deprecated (bundle or package deprecation);
//  2. when channel is "" (nothing names a channel: a requirement without one,
//     or a dependency), bundles in their package's default channel as their
//     catalog declares it. This is OLM v0's rule and what catalog authors
//     publish for: a pre-release in a "nightly" or "candidate" channel does not
//     win over the default channel's head just because its version is higher.
//     Other channels are used when the default channel has no bundle that fits
//     (a version range, an upgrade edge, a dependency of another bundle);
//  3. the highest version (a release sorts above none);
//  4. the highest catalog priority, then catalog name, then bundle name.
//
// When channel is set the candidates are already that channel's bundles and
// the default channel plays no part. bs is not modified.
func preferred(bs []*Bundle, channel string) []*Bundle {
	out := append([]*Bundle(nil), bs...)
	sort.SliceStable(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if ad, bd := a.Deprecated(), b.Deprecated(); ad != bd {
			return !ad
		}
		if channel == "" && a.inDefaultChannel != b.inDefaultChannel {
			return a.inDefaultChannel
		}
		return newer(a, b)
	})
	return out
}

// newer orders by version (newest first), then catalog priority (highest
// first), then catalog and bundle name: the order the index keeps bundles in.
func newer(a, b *Bundle) bool {
	if c := compareVersions(a, b); c != 0 {
		return c > 0
	}
	if a.CatalogPriority != b.CatalogPriority {
		return a.CatalogPriority > b.CatalogPriority
	}
	if a.Catalog != b.Catalog {
		return a.Catalog < b.Catalog
	}
	return a.Name < b.Name
}
