package integration

import (
	"context"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/olmv1/olmv1/platform/apiservertest"
)

// directSpec is a minimal Operator that installs a bundle image directly; cases change one thing.
const directSpec = `source: {type: Bundle, bundle: {source: {type: Image, image: {ref: "registry.test/widget-bundle:1.0.0"}}}}`

func direct(field, value string) string { return apiservertest.SpecWith(directSpec, field, value) }

func TestDirectBundleValidation(t *testing.T) {
	suite.CheckCases(t, operatorKind, []apiservertest.Case{
		{Name: "image without packageName", Spec: directSpec},
		{Name: "with packageName and the settings every install has", Spec: apiservertest.SpecWith(apiservertest.SpecWith(apiservertest.SpecWith(
			direct("packageName", "widget"), "installNamespace", "widgets"), "config", `{deploymentConfig: {env: [{name: A, value: "1"}]}}`), "progressDeadline", "10m")},
		{Name: "git Helm chart", Spec: `source: {type: Bundle, bundle: {format: Helm, source: {type: Git, git: {repository: "https://git.test/charts.git", ref: {tag: v1.0.0}, directory: chart}}}}`},
		{Name: "http plain manifests", Spec: `source: {type: Bundle, bundle: {format: Plain, source: {type: HTTP, http: {url: "https://files.test/bundle.tgz"}}}}`},
		{Name: "catalog source stated", Spec: apiservertest.SpecWith(minimalSpec, "source", `{type: Catalog}`)},
		{Name: "defaults of catalog fields are allowed", Spec: apiservertest.SpecWith(apiservertest.SpecWith(apiservertest.SpecWith(
			directSpec, "upgradePolicy", "Automatic"), "upgradeConstraintPolicy", "Enforce"), "dependencyPolicy", "Require")},
		{Name: "the default upgradeScope is allowed", Spec: direct("upgradeScope", "SemverCompatible")},

		{Name: "Bundle needs bundle", Spec: `source: {type: Bundle}`,
			WantErrs: []string{"bundle is required when type is Bundle: set spec.source.bundle.source"}},
		{Name: "bundle only with type Bundle", Spec: apiservertest.SpecWith(minimalSpec, "source", `{type: Catalog, bundle: {source: {type: Image, image: {ref: x}}}}`),
			WantErrs: []string{"bundle must not be set unless type is Bundle"}},
		{Name: "catalog needs packageName", Spec: `source: {type: Catalog}`,
			WantErrs: []string{"packageName is required unless spec.source.type is Bundle"}},
		{Name: "source type must be known", Spec: apiservertest.SpecWith(minimalSpec, "source", `{type: Chart}`),
			WantErrs: []string{`spec.source.type: Unsupported value: "Chart"`}},
		{Name: "format must be known", Spec: direct("source.bundle.format", "Zip"),
			WantErrs: []string{`spec.source.bundle.format: Unsupported value: "Zip"`}},
		{Name: "the bundle source is validated like a BundleDeployment's", Spec: direct("source.bundle.source", `{type: Git, image: {ref: x}}`),
			WantErrs: []string{"git is required when type is Git", "image must not be set unless type is Image"}},
		{Name: "version with Bundle", Spec: direct("version", "1.x"),
			WantErrs: []string{"version, channel and channels select bundles from catalogs and cannot be used with spec.source.type Bundle"}},
		{Name: "channel with Bundle", Spec: direct("channel", "stable"),
			WantErrs: []string{"version, channel and channels select bundles from catalogs and cannot be used with spec.source.type Bundle"}},
		{Name: "channels with Bundle", Spec: direct("channels", "[stable]"),
			WantErrs: []string{"change that reference to install another version"}},
		{Name: "catalogSelector with Bundle", Spec: direct("catalogSelector", "{matchLabels: {a: b}}"),
			WantErrs: []string{"catalogSelector cannot be used with spec.source.type Bundle: nothing is resolved from catalogs; remove it"}},
		{Name: "upgradePolicy Manual with Bundle", Spec: direct("upgradePolicy", "Manual"),
			WantErrs: []string{"upgradePolicy Manual, approvedVersion and upgradeConstraintPolicy Ignore apply to upgrades from catalogs and cannot be used with spec.source.type Bundle: upgrade by changing spec.source.bundle.source"}},
		{Name: "approvedVersion with Bundle", Spec: apiservertest.SpecWith(direct("upgradePolicy", "Manual"), "approvedVersion", "1.0.0"),
			WantErrs: []string{"upgradePolicy Manual, approvedVersion and upgradeConstraintPolicy Ignore apply to upgrades from catalogs"}},
		{Name: "upgradeConstraintPolicy Ignore with Bundle", Spec: direct("upgradeConstraintPolicy", "Ignore"),
			WantErrs: []string{"upgradePolicy Manual, approvedVersion and upgradeConstraintPolicy Ignore apply to upgrades from catalogs"}},
		{Name: "upgradeScope AnyVersion with Bundle", Spec: direct("upgradeScope", "AnyVersion"),
			WantErrs: []string{"upgradeScope AnyVersion applies to upgrades from catalogs and cannot be used with spec.source.type Bundle: upgrade by changing spec.source.bundle.source"}},
		{Name: "dependencyPolicy Install with Bundle", Spec: direct("dependencyPolicy", "Install"),
			WantErrs: []string{"dependencyPolicy Install cannot be used with spec.source.type Bundle: a direct bundle's dependencies are not resolved; create an Operator for each package it needs"}},
	})
}

func TestDirectBundleDefaultsAndImmutableFormat(t *testing.T) {
	obj, err := operatorKind.Object("direct-defaults", directSpec)
	if err != nil {
		t.Fatal(err)
	}
	if err := suite.Client.Create(t.Context(), obj); err != nil {
		t.Fatalf("creating: %v", err)
	}
	t.Cleanup(func() { _ = suite.Client.Delete(context.Background(), obj) })
	if got, _, _ := unstructured.NestedString(obj.Object, "spec", "source", "bundle", "format"); got != "RegistryV1" {
		t.Errorf("spec.source.bundle.format defaults to %q, want RegistryV1", got)
	}

	// The reference changes (an upgrade); the format does not.
	if err := unstructured.SetNestedField(obj.Object, "registry.test/widget-bundle:2.0.0", "spec", "source", "bundle", "source", "image", "ref"); err != nil {
		t.Fatal(err)
	}
	if err := suite.Client.Update(t.Context(), obj); err != nil {
		t.Fatalf("changing the reference was rejected: %v", err)
	}
	if err := unstructured.SetNestedField(obj.Object, "Helm", "spec", "source", "bundle", "format"); err != nil {
		t.Fatal(err)
	}
	apiservertest.CheckVerdict(t, suite.Client.Update(t.Context(), obj),
		[]string{"format is immutable: the provisioner of an installed bundle cannot change; delete and recreate the Operator to install another format"})

	// Moving between a catalog and a direct bundle is allowed.
	got := &unstructured.Unstructured{}
	got.SetGroupVersionKind(obj.GroupVersionKind())
	if err := suite.Client.Get(t.Context(), client.ObjectKeyFromObject(obj), got); err != nil {
		t.Fatal(err)
	}
	unstructured.RemoveNestedField(got.Object, "spec", "source")
	if err := unstructured.SetNestedField(got.Object, "widget", "spec", "packageName"); err != nil {
		t.Fatal(err)
	}
	if err := suite.Client.Update(t.Context(), got); err != nil {
		t.Fatalf("moving to a catalog install was rejected: %v", err)
	}
}
