package controller

import (
	"context"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	operators "github.com/olmv1/olmv1/deppy/pkg/operators"
	operatorsv1alpha1 "github.com/olmv1/olmv1/operator-controller/api/v1alpha1"
	"github.com/olmv1/olmv1/platform/step"
	rukpakv1alpha1 "github.com/olmv1/olmv1/rukpak/api/v1alpha1"
)

// Direct installs (spec.source.type Bundle). The Operator names its bundle's source itself: nothing
// is resolved and no catalog is read. The BundleDeployment is written by the same code as a
// resolved bundle's (ensureBundleDeployment, applySettings), with the Operator's source and the
// provisioner its format names, so ownership, deletion, pause, progress deadline, config and health
// behave the same. What is installed comes from rukpak's status (the revision's resolved source);
// rukpak does not report a bundle's package, version or dependencies, so the status names a direct
// bundle by its source.

// provisionerForFormat maps a direct bundle's format to the rukpak provisioner that installs it
// (RegistryV1 when empty).
func provisionerForFormat(f operatorsv1alpha1.BundleFormat) (rukpakv1alpha1.ProvisionerClassName, error) {
	switch f {
	case "", operatorsv1alpha1.BundleFormatRegistryV1:
		return rukpakv1alpha1.ProvisionerRegistry, nil
	case operatorsv1alpha1.BundleFormatPlain:
		return rukpakv1alpha1.ProvisionerPlain, nil
	case operatorsv1alpha1.BundleFormatHelm:
		return rukpakv1alpha1.ProvisionerHelm, nil
	case operatorsv1alpha1.BundleFormatKustomize:
		return rukpakv1alpha1.ProvisionerKustomize, nil
	}
	return "", fmt.Errorf("spec.source.bundle.format %q is not supported (want RegistryV1, Plain, Helm or Kustomize)", f)
}

// describeSource names a source for messages and status.resolvedBundle.source: the image reference,
// "git <repository> <branch|tag|commit>", the http URL, or "configmaps <name>, ...".
func describeSource(s *rukpakv1alpha1.Source) string {
	switch {
	case s.Image != nil:
		return s.Image.Ref
	case s.Git != nil:
		ref := s.Git.Ref.Branch
		switch {
		case s.Git.Ref.Tag != "":
			ref = "tag " + s.Git.Ref.Tag
		case s.Git.Ref.Commit != "":
			ref = "commit " + s.Git.Ref.Commit
		default:
			ref = "branch " + ref
		}
		d := ""
		if s.Git.Directory != "" {
			d = " directory " + s.Git.Directory
		}
		return fmt.Sprintf("git %s %s%s", s.Git.Repository, ref, d)
	case s.HTTP != nil:
		return s.HTTP.URL
	case len(s.ConfigMaps) > 0:
		msg := "configmaps "
		for i, c := range s.ConfigMaps {
			if i > 0 {
				msg += ", "
			}
			msg += c.ConfigMap.Name
		}
		return msg
	}
	return string(s.Type)
}

// desiredDirectBundleDeployment is the BundleDeployment that installs op's direct bundle into ns.
// Its bundle annotations are written empty (but for the package, when spec.packageName says it), so
// that an Operator moved from a catalog to a direct bundle no longer names the catalog's bundle.
func desiredDirectBundleDeployment(op *operatorsv1alpha1.Operator, ns string) (*rukpakv1alpha1.BundleDeployment, error) {
	db := op.Spec.Source.Bundle
	prov, err := provisionerForFormat(db.Format)
	if err != nil {
		return nil, err
	}
	spec := rukpakv1alpha1.BundleDeploymentSpec{
		ProvisionerClassName: prov,
		Source:               *db.Source.DeepCopy(),
		InstallNamespace:     ns,
	}
	if err := applySettings(&spec, op); err != nil {
		return nil, fmt.Errorf("the bundle at %s %w", describeSource(&db.Source), err)
	}
	return &rukpakv1alpha1.BundleDeployment{
		ObjectMeta: metav1.ObjectMeta{
			Name:            op.Name,
			Labels:          ownerLabels(op),
			OwnerReferences: []metav1.OwnerReference{ownerRef(op)},
			Annotations:     bundleAnnotations(&operators.Bundle{Package: op.Spec.PackageName}),
		},
		Spec: spec,
	}, nil
}

// installDirect writes op's direct bundle: its install namespace and its BundleDeployment. Dependency
// Operators op created while it installed from a catalog (dependencyPolicy Install) are released.
func (r *OperatorReconciler) installDirect(ctx context.Context, op *operatorsv1alpha1.Operator, obs *observations) *step.Error {
	ns := installNamespace(op, obs.bd, nil)
	obs.namespace = ns
	if err := r.ensureNamespaceUnlessInstalled(ctx, op, obs.bd, ns); err != nil {
		return installFailed(err)
	}
	want, err := desiredDirectBundleDeployment(op, ns)
	if err != nil {
		return step.Terminal(operatorsv1alpha1.TypeInstalled, operatorsv1alpha1.ReasonInstallationFailed, err)
	}
	bd, err := r.writeBundleDeployment(ctx, obs.bd, want, "source", describeSource(&want.Spec.Source))
	if err != nil {
		return installFailed(err)
	}
	obs.bd = bd
	deps, err := r.ensureDependencies(ctx, op, &operators.Bundle{})
	obs.dependencies = deps
	return installFailed(err)
}

// installedDirect is what bd, the BundleDeployment of a direct bundle, has installed: the source of
// its installed revision as rukpak resolved it (an image digest, a git commit, an http URL with its
// ETag), from status.history. installedUnknown when rukpak says something is installed without
// saying from where.
func installedDirect(bd *rukpakv1alpha1.BundleDeployment) installation {
	if bd == nil {
		return installation{}
	}
	in := installation{revision: bd.Status.InstalledRevision, bdName: bd.Name}
	if rev := bd.Status.InstalledRevision; rev > 0 {
		for _, h := range bd.Status.History {
			if h.Revision == rev && h.ResolvedSource != nil {
				in.state, in.bundle = installedImageOnly, &operatorsv1alpha1.BundleMetadata{Source: resolvedRef(h.ResolvedSource)}
				return in
			}
		}
	}
	if bd.Status.InstalledRevision > 0 || installedEarlier(bd) {
		in.state = installedUnknown
	}
	return in
}

// resolvedRef names what rukpak unpacked: the image's digest reference, else the resolved source's
// own description (git commit, http URL and ETag, ConfigMap versions).
func resolvedRef(rs *rukpakv1alpha1.ResolvedSource) string {
	if rs.Image != nil && rs.Image.Ref != "" {
		return rs.Image.Ref
	}
	return rs.String()
}

// setDirectResolved reports that op's direct bundle is not resolved: Resolved=True, reason
// DirectBundle, and status.resolvedBundle names the spec's source.
func setDirectResolved(op *operatorsv1alpha1.Operator, obs observations, set setFunc) {
	src := describeSource(&op.Spec.Source.Bundle.Source)
	op.Status.ResolvedBundle = &operatorsv1alpha1.BundleMetadata{Source: src}
	if obs.applyErr == nil || obs.dependencies != nil {
		op.Status.Dependencies = obs.dependencies
	}
	// What the installed content declares; kept while it is not read again (no reader, another
	// format), cleared when nothing is installed or the content could not be read.
	switch rep := obs.directReport; {
	case rep != nil:
		op.Status.DeclaredDependencies = rep.declared
	case installedResolvedSource(obs.bd) == nil:
		op.Status.DeclaredDependencies = nil
	}
	set(operatorsv1alpha1.TypeResolved, metav1.ConditionTrue, operatorsv1alpha1.ReasonDirectBundle,
		fmt.Sprintf("no resolution: installs %s directly (spec.source.type Bundle, format %s); no catalog is read, and the dependencies the bundle declares are not resolved or installed: create an Operator for each package it needs%s",
			src, formatOf(op), obs.directReport.message()))
	set(operatorsv1alpha1.TypeDeprecated, metav1.ConditionFalse, operatorsv1alpha1.ReasonNotDeprecated,
		"a direct bundle has no catalog to deprecate it")
	set(operatorsv1alpha1.TypeUpgradeAvailable, metav1.ConditionFalse, operatorsv1alpha1.ReasonUpToDate,
		"a direct bundle is upgraded by changing spec.source.bundle.source")
}

// formatOf is op's direct bundle format, RegistryV1 when empty.
func formatOf(op *operatorsv1alpha1.Operator) operatorsv1alpha1.BundleFormat {
	if f := op.Spec.Source.Bundle.Format; f != "" {
		return f
	}
	return operatorsv1alpha1.BundleFormatRegistryV1
}

// bundleLabel names the bundle bd installs in messages: "bundle <name>" (with " (version <v>)"
// when withVersion) from its annotations, or, for a direct bundle (no bundle name), "the bundle at
// <source>".
func bundleLabel(bd *rukpakv1alpha1.BundleDeployment, withVersion bool) string {
	if n := bd.Annotations[AnnotationBundleName]; n != "" && withVersion {
		return fmt.Sprintf("bundle %s (version %s)", n, bd.Annotations[AnnotationBundleVersion])
	} else if n != "" {
		return "bundle " + n
	}
	return "the bundle at " + describeSource(&bd.Spec.Source)
}
