// Package olm resolves OLM operators over file-based catalogs (FBC).
//
// It turns the packages, channels and bundles of one or more catalogs (the
// operator-registry model) plus what a cluster asks for (Requirements) and
// what it already runs (InstalledBundles) into variables for package resolve,
// through a pipeline of variable sources:
//
//	required-packages    one mandatory variable per Requirement, depending on
//	                     the matching bundles in preference order
//	installed-bundles    one mandatory variable per installed package, allowing
//	                     only the installed bundle and its upgrade edges
//	                     (replaces, skips, skipRange) unless the policy is Ignore
//	bundle-dependencies  olm.package.required, olm.gvk.required and
//	                     olm.constraint (package, gvk, cel, all, any, not) of
//	                     every bundle reached, transitively
//	uniqueness           at most one bundle per package, at most one bundle
//	                     providing each GVK
//
// Every candidate list is ordered by one rule (preference.go): non-deprecated
// bundles first, then, when no channel is named (a requirement without one, or
// any dependency), the package's default channel, then the highest version,
// then the highest catalog priority. operator-controller resolves through this
// package without reordering anything, so it and `deppy resolve` agree.
//
// Everything here is a pure function of its inputs: no cluster access, no I/O
// except the explicit Load helpers.
package olm
