package controller

import (
	"fmt"

	"github.com/google/go-containerregistry/pkg/name"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/olmv1/olmv1/deppy/pkg/olm"
	operators "github.com/olmv1/olmv1/deppy/pkg/operators"
	operatorsv1alpha1 "github.com/olmv1/olmv1/operator-controller/api/v1alpha1"
	rukpakv1alpha1 "github.com/olmv1/olmv1/rukpak/api/v1alpha1"
)

// What is installed. The Operator's status.installedBundle, the "stays installed" part of its
// messages and the Approved/UpToDate choice of UpgradeAvailable come from the BundleDeployment,
// never from the Operator's own status. The BundleDeployment's annotations and spec name the bundle
// it should install, which during an upgrade (pending or failed) is not the one installed; what is
// installed is rukpak's status.installedRevision, whose status.history entry records the image
// (resolvedSource) its content came from. That image is looked up among the bundles of the
// Operator's package that the resolution read.

// installedState says how much the BundleDeployment's status tells about what it installed.
type installedState int

const (
	// nothingInstalled: no BundleDeployment, or rukpak has installed no revision of it.
	nothingInstalled installedState = iota
	// installedBundleKnown: the bundle is known (name, version, catalog, image).
	installedBundleKnown
	// installedImageOnly: the installed image is known but no bundle of the package in the
	// catalogs has it (e.g. it was removed from its catalog).
	installedImageOnly
	// installedUnknown: something is installed but the status does not say what (rukpak has not
	// reported on the current generation and recorded no history for the installed revision).
	installedUnknown
)

// installation is what a BundleDeployment has installed.
type installation struct {
	state installedState
	// bundle identifies it: the whole BundleMetadata for installedBundleKnown, only its source (the
	// image) for installedImageOnly, nil otherwise.
	bundle *operatorsv1alpha1.BundleMetadata
	// revision is the BundleDeployment's status.installedRevision.
	revision int64
	// bdName is the BundleDeployment's name.
	bdName string
}

// installedBy is what bd (nil when there is none) has installed. catalog is the bundles of the
// Operator's package in the index the resolution read (nil when it could not run). In order:
//   - Installed=True for bd's current generation: the bundle bd's annotations name (rukpak installed
//     the spec's content);
//   - the image of the installed revision's history entry, when it is the spec's image (the spec
//     names that digest, the spec's source resolved to it for the current generation, or the
//     revision was unpacked from the reference the spec names, e.g. while paused): the bundle the
//     annotations name, which also says from which catalog it was resolved;
//   - otherwise the bundle of catalog with that image (by digest, or by the reference it was
//     unpacked from: catalogs name bundles by tag), or only the image when none has it (e.g. it was
//     removed from its catalog);
//   - installedUnknown when rukpak says a revision is installed without saying which image.
func installedBy(bd *rukpakv1alpha1.BundleDeployment, catalog []*olm.Bundle) installation {
	if bd == nil {
		return installation{}
	}
	in := installation{revision: bd.Status.InstalledRevision, bdName: bd.Name}
	fromSpec := func() installation {
		if in.bundle = bundleMetadata(bd.Annotations, sourceImage(bd)); in.bundle == nil || in.bundle.Name == "" {
			in.state, in.bundle = installedUnknown, nil
			return in
		}
		in.state = installedBundleKnown
		return in
	}
	if c := bdCondition(bd, rukpakv1alpha1.TypeInstalled); c != nil && c.Status == metav1.ConditionTrue {
		return fromSpec()
	}
	ref, requested := installedImage(bd)
	switch {
	case ref != "" && (specResolvesTo(bd, ref) || (requested != "" && requested == sourceImage(bd))):
		return fromSpec()
	case ref != "":
		b := bundleWithImage(catalog, ref, bd.Annotations[AnnotationCatalog])
		if b == nil && requested != "" {
			b = bundleWithImage(catalog, requested, bd.Annotations[AnnotationCatalog])
		}
		if b != nil {
			in.state = installedBundleKnown
			in.bundle = bundleMetadata(bundleAnnotations(&operators.Bundle{Name: b.Name, Package: b.Package, Version: b.VersionString, Catalog: b.Catalog,
				Properties: operators.RecordedProperties(b.Properties)}), b.Image)
			return in
		}
		in.state, in.bundle = installedImageOnly, bundleMetadata(nil, ref)
		return in
	case bd.Status.InstalledRevision > 0 || installedEarlier(bd):
		in.state = installedUnknown
		return in
	}
	return in
}

// installedImage is the image of bd's installed revision as its status.history records it: the
// digest reference, and the reference the spec named when it was unpacked (a tag; "" when rukpak
// did not record it). Both are "" when nothing is installed, or the history does not show that
// revision or its image.
func installedImage(bd *rukpakv1alpha1.BundleDeployment) (ref, requested string) {
	rev := bd.Status.InstalledRevision
	if rev == 0 {
		return "", ""
	}
	for _, h := range bd.Status.History {
		if h.Revision == rev {
			if h.ResolvedSource == nil || h.ResolvedSource.Image == nil {
				return "", ""
			}
			return h.ResolvedSource.Image.Ref, h.ResolvedSource.Image.Requested
		}
	}
	return "", ""
}

// specResolvesTo reports whether bd's spec source is image ref: the spec names that digest, or the
// spec's source was unpacked for the current generation and resolved to it (a tag).
func specResolvesTo(bd *rukpakv1alpha1.BundleDeployment, ref string) bool {
	if sameImage(sourceImage(bd), ref) {
		return true
	}
	c := bdCondition(bd, rukpakv1alpha1.TypeUnpacked)
	rs := bd.Status.ResolvedSource
	return c != nil && c.Status == metav1.ConditionTrue && rs != nil && rs.Image != nil && sameImage(rs.Image.Ref, ref)
}

// installedEarlier reports whether rukpak said Installed=True for an earlier generation of bd.
func installedEarlier(bd *rukpakv1alpha1.BundleDeployment) bool {
	for _, c := range bd.Status.Conditions {
		if c.Type == rukpakv1alpha1.TypeInstalled && c.Status == metav1.ConditionTrue {
			return true
		}
	}
	return false
}

// bundleWithImage is the bundle of bundles (newest first) whose image is ref, preferring one of
// catalog preferred (the catalog the BundleDeployment's bundle was resolved from); nil when none is.
func bundleWithImage(bundles []*olm.Bundle, ref, preferred string) *olm.Bundle {
	var found *olm.Bundle
	for _, b := range bundles {
		if !sameImage(b.Image, ref) {
			continue
		}
		if b.Catalog == preferred {
			return b
		}
		if found == nil {
			found = b
		}
	}
	return found
}

// sameImage reports whether image references a and b name the same content: they are equal, or both
// are digest references of the same repository and digest (however the registry is spelled:
// docker.io/x/y@sha256:… and index.docker.io/x/y@sha256:… are the same image). Tags never match a
// digest: which digest a tag named when it was unpacked is known only to rukpak.
func sameImage(a, b string) bool {
	if a == "" || b == "" {
		return false
	}
	if a == b {
		return true
	}
	da, errA := name.NewDigest(a)
	db, errB := name.NewDigest(b)
	return errA == nil && errB == nil && da.Context().Name() == db.Context().Name() && da.DigestStr() == db.DigestStr()
}

// something reports whether anything is installed.
func (in installation) something() bool { return in.state != nothingInstalled }

// is reports whether the installed bundle is known to be the one named name.
func (in installation) is(name string) bool {
	return in.state == installedBundleKnown && in.bundle.Name == name
}

// hasVersion reports whether the installed bundle is known to be at version v.
func (in installation) hasVersion(v string) bool {
	return in.state == installedBundleKnown && in.bundle.Version == v
}

// staysInstalled is the parenthesis that says, in the message of a failure, what stays installed
// ("" when nothing is installed).
func (in installation) staysInstalled() string {
	switch in.state {
	case installedBundleKnown:
		return fmt.Sprintf(" (bundle %s stays installed, version %s)", in.bundle.Name, in.bundle.Version)
	case installedImageOnly:
		return fmt.Sprintf(" (the bundle at %s stays installed)", in.bundle.Source)
	case installedUnknown:
		if in.revision > 0 {
			return fmt.Sprintf(" (revision %d of BundleDeployment %q stays installed)", in.revision, in.bdName)
		}
		return fmt.Sprintf(" (what BundleDeployment %q installed stays installed)", in.bdName)
	}
	return ""
}
