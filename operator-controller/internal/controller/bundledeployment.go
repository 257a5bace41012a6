package controller

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	catalogdv1alpha1 "github.com/olmv1/olmv1/catalogd/api/v1alpha1"
	operators "github.com/olmv1/olmv1/deppy/pkg/operators"
	operatorsv1alpha1 "github.com/olmv1/olmv1/operator-controller/api/v1alpha1"
	rukpakv1alpha1 "github.com/olmv1/olmv1/rukpak/api/v1alpha1"
)

// provisionerFor maps a bundle's olm.bundle.mediatype to the rukpak provisioner that installs it.
func provisionerFor(mediaType string) (rukpakv1alpha1.ProvisionerClassName, error) {
	switch mt := strings.ToLower(strings.TrimSpace(mediaType)); {
	case mt == "" || strings.HasPrefix(mt, "registry"):
		return rukpakv1alpha1.ProvisionerRegistry, nil
	case strings.HasPrefix(mt, "plain"):
		return rukpakv1alpha1.ProvisionerPlain, nil
	case strings.HasPrefix(mt, "helm"):
		return rukpakv1alpha1.ProvisionerHelm, nil
	case strings.HasPrefix(mt, "kustomize"):
		return rukpakv1alpha1.ProvisionerKustomize, nil
	}
	return "", fmt.Errorf("olm.bundle.mediatype %q is not supported (want registry+v1, plain+v0, helm or kustomize)", mediaType)
}

// configUnusedBy lists the settings of cfg that provisioner prov does not use: watchNamespaces and
// deploymentConfig are for registry+v1 bundles, values and valuesFrom for Helm charts, path for
// kustomizations.
func configUnusedBy(prov rukpakv1alpha1.ProvisionerClassName, cfg *rukpakv1alpha1.BundleConfig) []string {
	if cfg == nil {
		return nil
	}
	var unused []string
	for _, f := range []struct {
		name   string
		set    bool
		usedBy rukpakv1alpha1.ProvisionerClassName
	}{
		{"watchNamespaces", len(cfg.WatchNamespaces) > 0, rukpakv1alpha1.ProvisionerRegistry},
		{"config.deploymentConfig", cfg.DeploymentConfig != nil, rukpakv1alpha1.ProvisionerRegistry},
		{"config.values", cfg.Values != nil, rukpakv1alpha1.ProvisionerHelm},
		{"config.valuesFrom", len(cfg.ValuesFrom) > 0, rukpakv1alpha1.ProvisionerHelm},
		{"config.path", cfg.Path != "", rukpakv1alpha1.ProvisionerKustomize},
	} {
		if f.set && f.usedBy != prov {
			unused = append(unused, f.name)
		}
	}
	return unused
}

// installNamespace picks the namespace to install into: the one op's BundleDeployment bd installs
// into (an install never moves), else spec.installNamespace, else the bundle's suggested namespace,
// else the package name, else (a direct bundle without spec.packageName) the Operator's name. bd may be nil. status.installNamespace is never read: it only reports this
// choice.
func installNamespace(op *operatorsv1alpha1.Operator, bd *rukpakv1alpha1.BundleDeployment, b *operators.Bundle) string {
	switch {
	case bd != nil && bd.Spec.InstallNamespace != "":
		return bd.Spec.InstallNamespace
	case op.Spec.InstallNamespace != "":
		return op.Spec.InstallNamespace
	case b != nil && b.SuggestedNamespace != "":
		return b.SuggestedNamespace
	case op.Spec.PackageName == "":
		// A direct bundle may leave the package unnamed.
		return op.Name
	}
	return op.Spec.PackageName
}

// ownerRef makes obj owned (and garbage collected with) the Operator.
func ownerRef(op *operatorsv1alpha1.Operator) metav1.OwnerReference {
	yes := true
	return metav1.OwnerReference{
		APIVersion: operatorsv1alpha1.GroupVersion.String(), Kind: "Operator", Name: op.Name, UID: op.UID,
		Controller: &yes, BlockOwnerDeletion: &yes,
	}
}

func ownerLabels(op *operatorsv1alpha1.Operator) map[string]string {
	return map[string]string{LabelOwnerKind: "Operator", LabelOwnerName: op.Name}
}

// desiredBundleDeployment is the BundleDeployment that installs b for op into namespace ns. verify
// is the signature policy b's catalog requires of its bundles (bundleVerify), nil when none: it
// becomes the image source's verify, and nothing of op can change it.
func desiredBundleDeployment(op *operatorsv1alpha1.Operator, b *operators.Bundle, ns string, verify *rukpakv1alpha1.ImageVerification) (*rukpakv1alpha1.BundleDeployment, error) {
	prov, err := provisionerFor(b.MediaType)
	if err != nil {
		return nil, fmt.Errorf("bundle %s: %w", b.Name, err)
	}
	spec := rukpakv1alpha1.BundleDeploymentSpec{
		ProvisionerClassName: prov,
		Source: rukpakv1alpha1.Source{
			Type:  rukpakv1alpha1.SourceTypeImage,
			Image: &rukpakv1alpha1.ImageSource{Ref: b.Image, Verify: verify.DeepCopy()},
		},
		InstallNamespace: ns,
	}
	if err := applySettings(&spec, op); err != nil {
		return nil, fmt.Errorf("bundle %s %w", b.Name, err)
	}
	return &rukpakv1alpha1.BundleDeployment{
		ObjectMeta: metav1.ObjectMeta{
			Name:            op.Name,
			Labels:          ownerLabels(op),
			OwnerReferences: []metav1.OwnerReference{ownerRef(op)},
			Annotations:     bundleAnnotations(b),
		},
		Spec: spec,
	}, nil
}

// bundleVerify is the signature policy (spec.bundleVerify, nil when none) of the Catalog named
// catalog among cats, the Catalogs the resolution read. It is an error when no Catalog has that
// name: the bundle's policy is unknown, and installing it unverified could weaken it.
func bundleVerify(cats []catalogdv1alpha1.Catalog, catalog string) (*rukpakv1alpha1.ImageVerification, error) {
	for i := range cats {
		if cats[i].Name == catalog {
			return cats[i].Spec.BundleVerify, nil
		}
	}
	return nil, fmt.Errorf("catalog %q of the resolved bundle is not among the Catalogs read: its bundleVerify policy is unknown", catalog)
}

// applySettings writes into spec what op says about how to install, whatever bundle is installed:
// its config (with spec.watchNamespaces), policies, pause, progress deadline and progression
// probes. It is all of the BundleDeployment's spec except the bundle (source and provisioner) and
// the install namespace, so it applies to the installed bundle also when nothing resolves (e.g. its
// catalog is gone). Config fields the provisioner does not use are an error saying what to remove.
func applySettings(spec *rukpakv1alpha1.BundleDeploymentSpec, op *operatorsv1alpha1.Operator) error {
	var cfg *rukpakv1alpha1.BundleConfig
	if op.Spec.Config != nil {
		cfg = op.Spec.Config.DeepCopy()
	}
	if len(op.Spec.WatchNamespaces) > 0 {
		if cfg == nil {
			cfg = &rukpakv1alpha1.BundleConfig{}
		}
		cfg.WatchNamespaces = append([]string(nil), op.Spec.WatchNamespaces...)
	}
	if unused := configUnusedBy(spec.ProvisionerClassName, cfg); len(unused) > 0 {
		return fmt.Errorf("is installed by %s, which does not use %s (the BundleDeployment API rejects them): remove them from the Operator's spec",
			spec.ProvisionerClassName, strings.Join(unused, ", "))
	}
	spec.Config = cfg
	spec.CollisionPolicy, spec.DeletionPolicy = collisionPolicy(op), deletionPolicy(op)
	spec.Paused = op.Spec.Paused
	spec.ProgressDeadline, spec.UpgradeFailurePolicy = op.Spec.ProgressDeadline, op.Spec.UpgradeFailurePolicy
	spec.ProgressionProbes = op.Spec.ProgressionProbes
	return nil
}

// settingsChanged names the settings (applySettings) that differ between BundleDeployment specs a
// and b, in the Operator's terms, e.g. ["spec.config", "spec.paused"].
func settingsChanged(a, b *rukpakv1alpha1.BundleDeploymentSpec) []string {
	var changed []string
	add := func(differ bool, field string) {
		if differ {
			changed = append(changed, field)
		}
	}
	add(!equality.Semantic.DeepEqual(a.Config, b.Config), "spec.config")
	add(a.CollisionPolicy != b.CollisionPolicy, "spec.collisionPolicy")
	add(a.DeletionPolicy != b.DeletionPolicy, "spec.deletionPolicy")
	add(a.Paused != b.Paused, "spec.paused")
	add(!equality.Semantic.DeepEqual(a.ProgressDeadline, b.ProgressDeadline), "spec.progressDeadline")
	add(a.UpgradeFailurePolicy != b.UpgradeFailurePolicy, "spec.upgradeFailurePolicy")
	add(!equality.Semantic.DeepEqual(a.ProgressionProbes, b.ProgressionProbes), "spec.progressionProbes")
	return changed
}

// collisionPolicy is op's spec.collisionPolicy, Prevent when empty (an Operator created before the
// field existed): the BundleDeployment always states it, so that it shows what rukpak does and
// comparing specs does not see a difference between empty and the default.
func collisionPolicy(op *operatorsv1alpha1.Operator) rukpakv1alpha1.CollisionPolicy {
	if op.Spec.CollisionPolicy == "" {
		return rukpakv1alpha1.CollisionPolicyPrevent
	}
	return op.Spec.CollisionPolicy
}

// deletionPolicy is op's spec.deletionPolicy, Delete when empty.
func deletionPolicy(op *operatorsv1alpha1.Operator) rukpakv1alpha1.DeletionPolicy {
	if op.Spec.DeletionPolicy == "" {
		return rukpakv1alpha1.DeletionPolicyDelete
	}
	return op.Spec.DeletionPolicy
}

// mergeBundleDeployment copies what operator-controller owns of want into have and reports whether
// anything changed. Labels and annotations set by others are kept.
func mergeBundleDeployment(have, want *rukpakv1alpha1.BundleDeployment) bool {
	changed := false
	if have.Labels == nil {
		have.Labels = map[string]string{}
	}
	if have.Annotations == nil {
		have.Annotations = map[string]string{}
	}
	for _, m := range []struct{ have, want map[string]string }{{have.Labels, want.Labels}, {have.Annotations, want.Annotations}} {
		for k, v := range m.want {
			if m.have[k] != v {
				m.have[k] = v
				changed = true
			}
		}
	}
	if !equality.Semantic.DeepEqual(have.Spec, want.Spec) {
		have.Spec = want.Spec
		changed = true
	}
	if len(have.OwnerReferences) == 0 {
		have.OwnerReferences = want.OwnerReferences
		changed = true
	}
	return changed
}

// bundleAnnotations are the annotations by which the BundleDeployment that installs b names it
// (read back by bundleMetadata, and by deppy's cluster package, for which it is installed).
func bundleAnnotations(b *operators.Bundle) map[string]string {
	a := map[string]string{
		AnnotationPackage: b.Package, AnnotationBundleName: b.Name,
		AnnotationBundleVersion: b.Version, AnnotationCatalog: b.Catalog,
		// Always set (also to ""), so that a bundle without properties replaces the previous one's.
		AnnotationBundleProperties: propertiesAnnotation(bundleProperties(b.Properties)),
	}
	return a
}

// bundleMetadata is the identity of the bundle that BundleDeployment annotations (bundleAnnotations)
// name, with its image: status.resolvedBundle from the annotations the resolved bundle's
// BundleDeployment gets, status.installedBundle from those of the bundle installedBy finds. Only the
// image is set when the annotations name no bundle (an installed image no catalog has); nil when
// neither is known.
func bundleMetadata(annotations map[string]string, image string) *operatorsv1alpha1.BundleMetadata {
	if annotations[AnnotationBundleName] == "" && image == "" {
		return nil
	}
	return &operatorsv1alpha1.BundleMetadata{
		Name: annotations[AnnotationBundleName], Version: annotations[AnnotationBundleVersion],
		Catalog: annotations[AnnotationCatalog], Source: image,
		Properties: propertiesFromAnnotation(annotations[AnnotationBundleProperties]),
	}
}

// sourceImage is the image bd installs ("" when its source is not an image).
func sourceImage(bd *rukpakv1alpha1.BundleDeployment) string {
	if bd.Spec.Source.Image == nil {
		return ""
	}
	return bd.Spec.Source.Image.Ref
}
