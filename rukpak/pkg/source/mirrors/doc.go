// Package mirrors decides where an image is pulled from: the registry its reference names, or
// mirrors of it.
//
// The configuration comes from two places, merged by Merge:
//
//   - a registries.conf file in the containers-registries.conf(5) version 2 syntax ([[registry]]
//     tables with prefix, location, insecure, blocked, mirror-by-digest-only and [[registry.mirror]]
//     tables with location, insecure and pull-from-mirror), read by Parse;
//   - the ImageDigestMirrorSet and ImageTagMirrorSet objects of an OpenShift cluster
//     (config.openshift.io/v1), read by FromMirrorSets: a digest mirror set serves only digest
//     references, a tag mirror set only tag references, and mirrorSourcePolicy NeverContactSource
//     blocks the source.
//
// Config.Plan is the pure core: for one reference it picks the entry with the longest matching
// prefix (an exact host[:port][/path] prefix beats a *.example.com wildcard) and returns the
// endpoints to try in order: the mirrors that serve this kind of reference (digest or tag), then
// the source unless it is blocked. Provider is the thin shell that reads the file again when it
// changes and lists the mirror sets (at most once per TTL) when the cluster serves their API.
//
// Not supported: the version 1 syntax ([registries.search] ...), registries.conf.d drop-in
// directories, unqualified-search-registries and short-name aliases (references are always fully
// qualified here; these keys are accepted and ignored), credential helpers, and the
// image.config.openshift.io cluster object (allowed, blocked and insecure registries).
//
// The rules are written from the documented behaviour, not from containers/image's code.
package mirrors
