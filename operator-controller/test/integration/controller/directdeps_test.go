package controller

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	operatorsv1alpha1 "github.com/olmv1/olmv1/operator-controller/api/v1alpha1"
	"github.com/olmv1/olmv1/operator-controller/internal/controller"
	rukpakv1alpha1 "github.com/olmv1/olmv1/rukpak/api/v1alpha1"
	"github.com/olmv1/olmv1/rukpak/pkg/imagebuild"
)

// pushBundle builds the registry+v1 bundle in testdata/dir and pushes it to the suite's registry as
// repo:tag; it returns the tag reference and the digest reference.
func pushBundle(t *testing.T, dir, repo, tag string) (ref, digest string) {
	t.Helper()
	img, err := imagebuild.RegistryV1BundleImage(filepath.Join("testdata", dir))
	if err != nil {
		t.Fatal(err)
	}
	ref = fmt.Sprintf("%s/%s:%s", registryHost, repo, tag)
	d, err := imagebuild.Push(t.Context(), img, ref, imagebuild.WithInsecure())
	if err != nil {
		t.Fatal(err)
	}
	return ref, d.String()
}

// declared returns op's declared dependencies by value.
func declared(op *operatorsv1alpha1.Operator) map[string]operatorsv1alpha1.DeclaredDependency {
	m := map[string]operatorsv1alpha1.DeclaredDependency{}
	for _, d := range op.Status.DeclaredDependencies {
		m[d.Type+" "+d.Value] = d
	}
	return m
}

// A direct bundle reports what it is (package, version, CSV name) and the dependencies it declares,
// read from the content rukpak installed (the digest of the installed revision, pulled from a real
// registry); each dependency says whether the cluster has it, and none is installed. A CRD that
// arrives, and an Operator installing the required package, turn Missing into Present.
func TestDirectBundleReportsDeclaredDependencies(t *testing.T) {
	ref, digest := pushBundle(t, "direct-gadget", "direct/gadget-bundle", "1.2.0")
	createOperator(t, "direct-gadget", directSpec(ref))
	waitForBDImage(t, "direct-gadget", ref)
	// Before anything is installed, only the source is known.
	op := waitForCondition(t, "direct-gadget", operatorsv1alpha1.TypeResolved, metav1.ConditionTrue, operatorsv1alpha1.ReasonDirectBundle, "no resolution: installs "+ref)
	if len(op.Status.DeclaredDependencies) != 0 {
		t.Errorf("declared dependencies before the install: %+v", op.Status.DeclaredDependencies)
	}

	playRukpakInstalledRevision(t, "direct-gadget", 1, ref, digest)
	cog, pkg, wheel := "olm.gvk.required cogs.example.com/v1 Cog", "olm.package.required sprocket >=1.0.0 <2.0.0", "olm.gvk.required wheels.example.com/v1 Wheel"
	op = waitForCondition(t, "direct-gadget", operatorsv1alpha1.TypeResolved, metav1.ConditionTrue, operatorsv1alpha1.ReasonDirectBundle,
		"the installed bundle is package gadget version 1.2.0 (gadget.v1.2.0)", "declares 3 dependencies", "never installed",
		"missing on the cluster: "+pkg+", "+cog+", "+wheel)
	if ib := op.Status.InstalledBundle; ib == nil || ib.Name != "gadget.v1.2.0" || ib.Version != "1.2.0" || ib.Source != digest ||
		len(ib.Properties) == 0 || ib.Properties[0].Value != `{"packageName":"gadget","version":"1.2.0"}` {
		t.Errorf("installedBundle %+v", op.Status.InstalledBundle)
	}
	deps := declared(op)
	if len(deps) != 3 || deps[cog].Status != operatorsv1alpha1.DependencyMissing || deps[wheel].Status != operatorsv1alpha1.DependencyMissing ||
		deps[pkg].Status != operatorsv1alpha1.DependencyMissing || !strings.Contains(deps[cog].Message, "no CustomResourceDefinition") ||
		deps[pkg].Message != "no Operator installs package sprocket" {
		t.Errorf("declared dependencies: %+v", op.Status.DeclaredDependencies)
	}
	// Nothing is installed for them: no Operator, no BundleDeployment but its own.
	bds := &rukpakv1alpha1.BundleDeploymentList{}
	if err := k8s.List(t.Context(), bds); err != nil {
		t.Fatal(err)
	}
	for _, bd := range bds.Items {
		if bd.Annotations[controller.AnnotationPackage] == "sprocket" {
			t.Errorf("BundleDeployment %s installs the dependency", bd.Name)
		}
	}

	// The Cog CRD arrives; an Operator installs sprocket 1.4.0.
	createCRD(t, "cogs", "cogs.example.com", "Cog")
	createInstalledBD(t, "sprocket-op", "sprocket", "1.4.0")
	eventually(t, "Cog and sprocket Present, Wheel still Missing", func() error {
		op, err := getOperator("direct-gadget")
		if err != nil {
			return err
		}
		d := declared(op)
		if d[cog].Status != operatorsv1alpha1.DependencyPresent || d[pkg].Status != operatorsv1alpha1.DependencyPresent || d[wheel].Status != operatorsv1alpha1.DependencyMissing {
			return fmt.Errorf("%+v", op.Status.DeclaredDependencies)
		}
		if d[pkg].Message != "Operator sprocket-op installs version 1.4.0" {
			return fmt.Errorf("package message %q", d[pkg].Message)
		}
		return nil
	})
	waitForCondition(t, "direct-gadget", operatorsv1alpha1.TypeResolved, metav1.ConditionTrue, operatorsv1alpha1.ReasonDirectBundle,
		"missing on the cluster: "+wheel)
}

// A direct bundle whose content cannot be read (the image was removed from the registry) still
// installs; the Resolved condition says what could not be read.
func TestDirectBundleUnreadableContentIsReported(t *testing.T) {
	ref := registryHost + "/direct/nowhere-bundle:1.0.0"
	createOperator(t, "direct-nowhere", directSpec(ref))
	waitForBDImage(t, "direct-nowhere", ref)
	playRukpakInstalledRevision(t, "direct-nowhere", 1, ref, registryHost+"/direct/nowhere-bundle@sha256:"+strings.Repeat("a", 64))
	waitForCondition(t, "direct-nowhere", operatorsv1alpha1.TypeResolved, metav1.ConditionTrue, operatorsv1alpha1.ReasonDirectBundle,
		"its package, version and dependencies could not be read from its content")
	waitForCondition(t, "direct-nowhere", operatorsv1alpha1.TypeInstalled, metav1.ConditionTrue, operatorsv1alpha1.ReasonInstallationSucceeded)
}

// createCRD creates a namespaced CRD plural.group serving kind at v1, removed when the test ends.
func createCRD(t *testing.T, plural, group, kind string) {
	t.Helper()
	crd := &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: plural + "." + group},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: group, Scope: apiextensionsv1.NamespaceScoped,
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: plural, Kind: kind, ListKind: kind + "List"},
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{Name: "v1", Served: true, Storage: true,
				Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{Type: "object", XPreserveUnknownFields: ptrTo(true)}}}},
		},
	}
	if err := k8s.Create(t.Context(), crd); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = k8s.Delete(context.Background(), crd) })
}

// createInstalledBD creates the BundleDeployment an Operator named owner would have for package pkg
// at version, reported installed, removed when the test ends.
func createInstalledBD(t *testing.T, owner, pkg, version string) {
	t.Helper()
	bd := &rukpakv1alpha1.BundleDeployment{
		ObjectMeta: metav1.ObjectMeta{Name: owner, Labels: map[string]string{controller.LabelOwnerKind: "Operator", controller.LabelOwnerName: owner},
			Annotations: map[string]string{controller.AnnotationPackage: pkg, controller.AnnotationBundleVersion: version}},
		Spec: rukpakv1alpha1.BundleDeploymentSpec{ProvisionerClassName: rukpakv1alpha1.ProvisionerRegistry, InstallNamespace: owner,
			Source: rukpakv1alpha1.Source{Type: rukpakv1alpha1.SourceTypeImage, Image: &rukpakv1alpha1.ImageSource{Ref: "registry.test/" + pkg + ":" + version}}},
	}
	if err := k8s.Create(t.Context(), bd); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = k8s.Delete(context.Background(), bd) })
	playRukpakInstalledRevision(t, owner, 1, bd.Spec.Source.Image.Ref, "registry.test/"+pkg+"@sha256:"+strings.Repeat("b", 64))
}

func ptrTo[T any](v T) *T { return &v }
