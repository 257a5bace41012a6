package controller

import (
	"context"
	"fmt"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"

	operatorsv1alpha1 "github.com/olmv1/olmv1/operator-controller/api/v1alpha1"
	"github.com/olmv1/olmv1/operator-controller/internal/controller"
	rukpakv1alpha1 "github.com/olmv1/olmv1/rukpak/api/v1alpha1"
)

// directSpec is an Operator that installs the bundle image ref directly (spec.source.type Bundle).
func directSpec(ref string) operatorsv1alpha1.OperatorSpec {
	return operatorsv1alpha1.OperatorSpec{Source: &operatorsv1alpha1.OperatorSource{
		Type:   operatorsv1alpha1.SourceTypeBundle,
		Bundle: &operatorsv1alpha1.DirectBundle{Source: rukpakv1alpha1.Source{Type: rukpakv1alpha1.SourceTypeImage, Image: &rukpakv1alpha1.ImageSource{Ref: ref}}},
	}}
}

// playRukpakInstalledRevision writes what rukpak reports once it installed revision rev of the
// BundleDeployment's current spec from digest: Unpacked, Installed and Healthy, the resolved
// source and the history entry.
func playRukpakInstalledRevision(t *testing.T, name string, rev int64, requested, digest string) {
	t.Helper()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		bd, err := getBD(name)
		if err != nil {
			return err
		}
		rs := &rukpakv1alpha1.ResolvedSource{Type: rukpakv1alpha1.SourceTypeImage, Image: &rukpakv1alpha1.ResolvedImageSource{Ref: digest, Requested: requested}}
		bd.Status.ResolvedSource, bd.Status.InstalledRevision = rs, rev
		bd.Status.History = append([]rukpakv1alpha1.BundleDeploymentRevision{{Revision: rev, ResolvedSource: rs, InstalledAt: metav1.Now()}}, bd.Status.History...)
		bd.Status.ObservedGeneration = bd.Generation
		for _, c := range []metav1.Condition{
			{Type: rukpakv1alpha1.TypeUnpacked, Status: metav1.ConditionTrue, Reason: rukpakv1alpha1.ReasonUnpackSucceeded, Message: "unpacked"},
			{Type: rukpakv1alpha1.TypeInstalled, Status: metav1.ConditionTrue, Reason: rukpakv1alpha1.ReasonInstallationSucceeded, Message: "installed"},
			{Type: rukpakv1alpha1.TypeHealthy, Status: metav1.ConditionTrue, Reason: rukpakv1alpha1.ReasonHealthy, Message: "healthy"},
		} {
			c.ObservedGeneration = bd.Generation
			setCondition(&bd.Status.Conditions, c)
		}
		return k8s.Status().Update(context.Background(), bd)
	})
	if err != nil {
		t.Fatalf("writing the status of BundleDeployment %s: %v", name, err)
	}
}

func setCondition(conds *[]metav1.Condition, c metav1.Condition) {
	c.LastTransitionTime = metav1.Now()
	for i := range *conds {
		if (*conds)[i].Type == c.Type {
			(*conds)[i] = c
			return
		}
	}
	*conds = append(*conds, c)
}

// An Operator with spec.source.type Bundle installs an image no catalog lists, with no Catalog at all
// for it: no resolution runs, the BundleDeployment is the same owned one a resolved bundle gets, with
// the Operator's source. Changing the reference upgrades; what rukpak reports fills installedBundle.
func TestDirectBundleInstallsWithoutACatalog(t *testing.T) {
	ref1, ref2 := "registry.test/direct/widget-bundle:1.0.0", "registry.test/direct/widget-bundle:2.0.0"
	spec := directSpec(ref1)
	spec.Config = &rukpakv1alpha1.BundleConfig{DeploymentConfig: &rukpakv1alpha1.DeploymentConfig{NodeSelector: map[string]string{"kubernetes.io/os": "linux"}}}
	spec.ProgressDeadline = &metav1.Duration{Duration: 5 * time.Minute}
	createOperator(t, "direct-op", spec)

	bd := waitForBDImage(t, "direct-op", ref1)
	if bd.Spec.ProvisionerClassName != rukpakv1alpha1.ProvisionerRegistry || bd.Spec.InstallNamespace != "direct-op" ||
		bd.Spec.Config == nil || bd.Spec.Config.DeploymentConfig == nil || bd.Spec.ProgressDeadline == nil ||
		bd.Spec.CollisionPolicy != rukpakv1alpha1.CollisionPolicyPrevent || bd.Spec.DeletionPolicy != rukpakv1alpha1.DeletionPolicyDelete {
		t.Errorf("BundleDeployment spec: %+v", bd.Spec)
	}
	if owner := metav1.GetControllerOf(bd); owner == nil || owner.Kind != "Operator" || owner.Name != "direct-op" {
		t.Errorf("BundleDeployment owner: %+v", bd.OwnerReferences)
	}
	if bd.Annotations[controller.AnnotationBundleName] != "" || bd.Annotations[controller.AnnotationCatalog] != "" {
		t.Errorf("a direct bundle names no catalog bundle: %v", bd.Annotations)
	}
	if ns, err := getNamespace("direct-op"); err != nil || ns.Labels[controller.LabelOwnerName] != "direct-op" {
		t.Errorf("install namespace (the Operator's name, no packageName): %v %v", err, ns.Labels)
	}
	op := waitForCondition(t, "direct-op", operatorsv1alpha1.TypeResolved, metav1.ConditionTrue, operatorsv1alpha1.ReasonDirectBundle,
		"no resolution: installs "+ref1+" directly", "dependencies the bundle declares are not resolved or installed")
	if rb := op.Status.ResolvedBundle; rb == nil || rb.Source != ref1 || rb.Catalog != "" {
		t.Errorf("resolvedBundle %+v", op.Status.ResolvedBundle)
	}
	waitForCondition(t, "direct-op", operatorsv1alpha1.TypeInstalled, metav1.ConditionUnknown, operatorsv1alpha1.ReasonInstallationStatusUnknown, "the bundle at "+ref1)

	digest1 := "registry.test/direct/widget-bundle@sha256:" + fmt.Sprintf("%064d", 1)
	playRukpakInstalledRevision(t, "direct-op", 1, ref1, digest1)
	op = waitForCondition(t, "direct-op", operatorsv1alpha1.TypeInstalled, metav1.ConditionTrue, operatorsv1alpha1.ReasonInstallationSucceeded, "the bundle at "+ref1)
	waitForCondition(t, "direct-op", operatorsv1alpha1.TypeHealthy, metav1.ConditionTrue, operatorsv1alpha1.ReasonHealthy)
	if ib := op.Status.InstalledBundle; ib == nil || ib.Source != digest1 {
		t.Errorf("installedBundle %+v, want source %s", op.Status.InstalledBundle, digest1)
	}

	// Upgrade: change the reference.
	updateOperator(t, "direct-op", func(op *operatorsv1alpha1.Operator) { op.Spec.Source.Bundle.Source.Image.Ref = ref2 })
	waitForBDImage(t, "direct-op", ref2)
	op = waitForCondition(t, "direct-op", operatorsv1alpha1.TypeResolved, metav1.ConditionTrue, operatorsv1alpha1.ReasonDirectBundle, ref2)
	if ib := op.Status.InstalledBundle; ib == nil || ib.Source != digest1 {
		t.Errorf("installedBundle during the upgrade %+v, want the installed %s", op.Status.InstalledBundle, digest1)
	}
	// rukpak fails to pull the new image: its reason and message reach the Operator, and what stays
	// installed is said.
	setBDConditions(t, "direct-op",
		metav1.Condition{Type: rukpakv1alpha1.TypeUnpacked, Status: metav1.ConditionFalse, Reason: rukpakv1alpha1.ReasonUnpackFailed, Message: `image "` + ref2 + `" not found`},
		metav1.Condition{Type: rukpakv1alpha1.TypeInstalled, Status: metav1.ConditionFalse, Reason: rukpakv1alpha1.ReasonInstallPending, Message: "waiting for the bundle"})
	waitForCondition(t, "direct-op", operatorsv1alpha1.TypeInstalled, metav1.ConditionFalse, rukpakv1alpha1.ReasonUnpackFailed,
		`BundleDeployment "direct-op": image "`+ref2+`" not found`, "the bundle at "+digest1+" stays installed")

	digest2 := "registry.test/direct/widget-bundle@sha256:" + fmt.Sprintf("%064d", 2)
	playRukpakInstalledRevision(t, "direct-op", 2, ref2, digest2)
	op = waitForCondition(t, "direct-op", operatorsv1alpha1.TypeInstalled, metav1.ConditionTrue, operatorsv1alpha1.ReasonInstallationSucceeded, ref2)
	if ib := op.Status.InstalledBundle; ib == nil || ib.Source != digest2 {
		t.Errorf("installedBundle after the upgrade %+v", op.Status.InstalledBundle)
	}

	// Pause and the policies take the same path as a resolved bundle's.
	updateOperator(t, "direct-op", func(op *operatorsv1alpha1.Operator) {
		op.Spec.Paused, op.Spec.DeletionPolicy = true, rukpakv1alpha1.DeletionPolicyOrphan
	})
	eventually(t, "the BundleDeployment is paused and says Orphan", func() error {
		bd, err := getBD("direct-op")
		if err != nil {
			return err
		}
		if !bd.Spec.Paused || bd.Spec.DeletionPolicy != rukpakv1alpha1.DeletionPolicyOrphan {
			return fmt.Errorf("paused %v, deletionPolicy %s", bd.Spec.Paused, bd.Spec.DeletionPolicy)
		}
		return nil
	})
	waitForCondition(t, "direct-op", operatorsv1alpha1.TypePaused, metav1.ConditionTrue, operatorsv1alpha1.ReasonPaused)
}

// A direct bundle in another format gets that format's provisioner; a git source is passed as it is;
// spec.packageName, when given, names the install namespace and the package annotation.
func TestDirectBundleFormatsAndGit(t *testing.T) {
	spec := operatorsv1alpha1.OperatorSpec{PackageName: "charts", Source: &operatorsv1alpha1.OperatorSource{
		Type: operatorsv1alpha1.SourceTypeBundle,
		Bundle: &operatorsv1alpha1.DirectBundle{Format: operatorsv1alpha1.BundleFormatHelm, Source: rukpakv1alpha1.Source{
			Type: rukpakv1alpha1.SourceTypeGit, Git: &rukpakv1alpha1.GitSource{Repository: "https://git.test/charts.git", Ref: rukpakv1alpha1.GitRef{Tag: "v1.0.0"}, Directory: "chart"},
		}},
	}}
	createOperator(t, "direct-helm", spec)
	var bd *rukpakv1alpha1.BundleDeployment
	eventually(t, "BundleDeployment direct-helm", func() error {
		var err error
		bd, err = getBD("direct-helm")
		return err
	})
	if bd.Spec.ProvisionerClassName != rukpakv1alpha1.ProvisionerHelm || bd.Spec.Source.Git == nil || bd.Spec.Source.Git.Ref.Tag != "v1.0.0" ||
		bd.Spec.Source.Git.Directory != "chart" || bd.Spec.InstallNamespace != "charts" || bd.Annotations[controller.AnnotationPackage] != "charts" {
		t.Errorf("BundleDeployment %+v %v", bd.Spec, bd.Annotations)
	}
	waitForCondition(t, "direct-helm", operatorsv1alpha1.TypeResolved, metav1.ConditionTrue, operatorsv1alpha1.ReasonDirectBundle,
		"installs git https://git.test/charts.git tag v1.0.0 directory chart directly", "format Helm")

	// A config the provisioner does not use is reported, as for a catalog bundle.
	updateOperator(t, "direct-helm", func(op *operatorsv1alpha1.Operator) { op.Spec.WatchNamespaces = []string{"a"} })
	waitForCondition(t, "direct-helm", operatorsv1alpha1.TypeInstalled, metav1.ConditionFalse, operatorsv1alpha1.ReasonInstallationFailed,
		"core-rukpak-io-helm, which does not use watchNamespaces")
}

// An Operator moved from a catalog to a direct bundle keeps its BundleDeployment and namespace: the
// BundleDeployment's source becomes the Operator's, and the catalog bundle's annotations are cleared.
// Other Operators still resolve (the direct one takes no part).
func TestCatalogOperatorMovesToADirectBundle(t *testing.T) {
	serveCatalog(t, "to-direct", "h1", packageFBC("omicron", bundleFBC{version: "1.0.0"}), nil)
	createOperator(t, "omicron-op", operatorsv1alpha1.OperatorSpec{PackageName: "omicron"})
	waitForBDImage(t, "omicron-op", image("omicron", "1.0.0"))

	ref := "registry.test/hotfix/omicron-bundle:1.0.1-hotfix"
	updateOperator(t, "omicron-op", func(op *operatorsv1alpha1.Operator) { op.Spec.Source = directSpec(ref).Source })
	bd := waitForBDImage(t, "omicron-op", ref)
	if bd.Spec.InstallNamespace != "omicron" || bd.Annotations[controller.AnnotationBundleName] != "" || bd.Annotations[controller.AnnotationBundleVersion] != "" ||
		bd.Annotations[controller.AnnotationPackage] != "omicron" {
		t.Errorf("BundleDeployment after the move: %+v %v", bd.Spec, bd.Annotations)
	}
	waitForCondition(t, "omicron-op", operatorsv1alpha1.TypeResolved, metav1.ConditionTrue, operatorsv1alpha1.ReasonDirectBundle, ref)
	waitForCondition(t, "omicron-op", operatorsv1alpha1.TypeDeprecated, metav1.ConditionFalse, operatorsv1alpha1.ReasonNotDeprecated, "no catalog")

	// Back to the catalog: resolution picks the catalog's bundle again.
	updateOperator(t, "omicron-op", func(op *operatorsv1alpha1.Operator) { op.Spec.Source = nil })
	waitForBDImage(t, "omicron-op", image("omicron", "1.0.0"))
	waitForCondition(t, "omicron-op", operatorsv1alpha1.TypeResolved, metav1.ConditionTrue, operatorsv1alpha1.ReasonResolutionSucceeded, "omicron.v1.0.0")
}
