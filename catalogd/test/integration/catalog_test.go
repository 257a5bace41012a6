package integration

import (
	"context"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	catalogdv1alpha1 "github.com/olmv1/olmv1/catalogd/api/v1alpha1"
	"github.com/olmv1/olmv1/platform/apiservertest"
	rukpakv1alpha1 "github.com/olmv1/olmv1/rukpak/api/v1alpha1"
)

var catalogKind = apiservertest.Kind{
	Group: "catalogd.operatorframework.io", Version: "v1alpha1", Kind: "Catalog", Resource: "catalogs",
}

// seedExample is the Catalog of the project's seed, verbatim; it must be accepted as is.
const seedExample = `
apiVersion: catalogd.operatorframework.io/v1alpha1
kind: Catalog
metadata: {name: my-catalog}
spec:
  source:
    type: ConfigMaps
    configMaps:
    - configMap: {name: my-catalog-content}
      path: configs
`

// imageSpec is a minimal valid spec; cases change one thing in it.
const imageSpec = `source: {type: Image, image: {ref: "quay.io/operatorhubio/catalog:latest"}}`

func TestCatalogSeedExample(t *testing.T) {
	obj := &unstructured.Unstructured{}
	if err := yaml.Unmarshal([]byte(seedExample), &obj.Object); err != nil {
		t.Fatal(err)
	}
	if err := suite.Client.Create(t.Context(), obj); err != nil {
		t.Fatalf("the seed's example Catalog was rejected: %v", err)
	}
	t.Cleanup(func() { _ = suite.Client.Delete(context.Background(), obj) })

	got := &catalogdv1alpha1.Catalog{}
	if err := suite.Client.Get(t.Context(), client.ObjectKey{Name: "my-catalog"}, got); err != nil {
		t.Fatalf("reading the Catalog through the Go types: %v", err)
	}
	want := catalogdv1alpha1.CatalogSpec{
		Source: rukpakv1alpha1.Source{
			Type: rukpakv1alpha1.SourceTypeConfigMaps,
			ConfigMaps: []rukpakv1alpha1.ConfigMapSource{{
				ConfigMap: rukpakv1alpha1.ConfigMapReference{Name: "my-catalog-content"},
				Path:      "configs",
			}},
		},
		Priority: 0,
	}
	if !equality.Semantic.DeepEqual(got.Spec, want) {
		t.Errorf("spec read back:\n got  %+v\n want %+v", got.Spec, want)
	}
	if p, found, _ := unstructured.NestedInt64(obj.Object, "spec", "priority"); !found || p != 0 {
		t.Errorf("spec.priority: want the default 0 to be set by the API server, got %d (set: %v)", p, found)
	}
}

func TestCatalogValidation(t *testing.T) {
	suite.CheckCases(t, catalogKind, []apiservertest.Case{
		{Name: "image catalog", Spec: imageSpec},
		{Name: "positive priority", Spec: apiservertest.SpecWith(imageSpec, "priority", "100")},
		{Name: "negative priority", Spec: apiservertest.SpecWith(imageSpec, "priority", "-100")},
		{Name: "the longest name", ObjectName: apiservertest.LongName(63), Spec: imageSpec},

		{Name: "name is at most 63 characters", ObjectName: apiservertest.LongName(64), Spec: imageSpec,
			WantErrs: []string{"metadata.name must be at most 63 characters"}},
		{Name: "source is required", Spec: `{priority: 1}`,
			WantErrs: []string{"spec.source: Required value"}},
		{Name: "priority must be an integer", Spec: apiservertest.SpecWith(imageSpec, "priority", `"high"`),
			WantErrs: []string{"spec.priority: Invalid value", "must be of type integer"}},
		{Name: "paused", Spec: apiservertest.SpecWith(imageSpec, "paused", "true")},
		{Name: "paused must be a boolean", Spec: apiservertest.SpecWith(imageSpec, "paused", `"yes"`),
			WantErrs: []string{"spec.paused: Invalid value", "must be of type boolean"}},
		{Name: "bundleVerify with cosign keys", Spec: apiservertest.SpecWith(imageSpec, "bundleVerify", `{provider: Cosign, cosign: {secretRef: {name: bundle-keys}}}`)},
		{Name: "bundleVerify.provider is required", Spec: apiservertest.SpecWith(imageSpec, "bundleVerify", `{cosign: {secretRef: {name: k}}}`),
			WantErrs: []string{"spec.bundleVerify.provider: Required value"}},
		{Name: "bundleVerify.provider must be a known one", Spec: apiservertest.SpecWith(imageSpec, "bundleVerify", `{provider: Notation}`),
			WantErrs: []string{`spec.bundleVerify.provider: Unsupported value: "Notation"`}},
		{Name: "bundleVerify Cosign requires cosign", Spec: apiservertest.SpecWith(imageSpec, "bundleVerify", `{provider: Cosign}`),
			WantErrs: []string{"cosign is required when provider is Cosign"}},
		{Name: "bundleVerify.cosign requires secretRef or keyless", Spec: apiservertest.SpecWith(imageSpec, "bundleVerify", `{provider: Cosign, cosign: {}}`),
			WantErrs: []string{"exactly one of secretRef (public keys) and keyless (certificate identity) is required"}},
		{Name: "bundleVerify.cosign.secretRef.name must be a Secret name", Spec: apiservertest.SpecWith(imageSpec, "bundleVerify", `{provider: Cosign, cosign: {secretRef: {name: My_Keys}}}`),
			WantErrs: []string{"spec.bundleVerify.cosign.secretRef.name", "should match"}},
	})
}

func TestCatalogSourceValidation(t *testing.T) {
	suite.CheckCases(t, catalogKind, apiservertest.InSpec(imageSpec, apiservertest.SourceCases()))
}

// TestCatalogGoTypesRoundTrip writes a Catalog with every spec field set through the Go types and
// reads it back unchanged: the CRD schema prunes nothing the Go types define.
func TestCatalogGoTypesRoundTrip(t *testing.T) {
	catalog := &catalogdv1alpha1.Catalog{
		ObjectMeta: metav1.ObjectMeta{Name: "round-trip"},
		Spec: catalogdv1alpha1.CatalogSpec{
			Source: rukpakv1alpha1.Source{
				Type: rukpakv1alpha1.SourceTypeHTTP,
				HTTP: &rukpakv1alpha1.HTTPSource{
					URL: "https://example.com/catalog.tar.gz", CASecret: "ca", InsecureSkipTLSVerify: true,
					PollInterval: &metav1.Duration{Duration: time.Hour},
				},
			},
			Priority: -3,
			Paused:   true,
			BundleVerify: &rukpakv1alpha1.ImageVerification{
				Provider: rukpakv1alpha1.VerificationProviderCosign,
				Cosign:   &rukpakv1alpha1.CosignVerification{SecretRef: &rukpakv1alpha1.SecretReference{Name: "bundle-keys"}},
			},
		},
	}
	want := catalog.Spec.DeepCopy()
	if err := suite.Client.Create(t.Context(), catalog); err != nil {
		t.Fatalf("creating a Catalog from the Go types: %v", err)
	}
	t.Cleanup(func() { _ = suite.Client.Delete(context.Background(), catalog) })
	got := &catalogdv1alpha1.Catalog{}
	if err := suite.Client.Get(t.Context(), client.ObjectKeyFromObject(catalog), got); err != nil {
		t.Fatalf("getting: %v", err)
	}
	if !equality.Semantic.DeepEqual(got.Spec, *want) {
		t.Errorf("spec changed on the way through the API server:\n got  %+v\n want %+v", got.Spec, *want)
	}
}

func TestCatalogStatusSubresourceAndPrinterColumns(t *testing.T) {
	obj, err := catalogKind.Object("printed", apiservertest.SpecWith(imageSpec, "priority", "7"))
	if err != nil {
		t.Fatal(err)
	}
	suite.AssertStatusSubresource(t, catalogKind, obj, `
observedGeneration: 2
conditions:
- {type: Unpacked, status: "False", reason: UnpackFailed, message: "image not found", lastTransitionTime: "2026-01-01T00:00:00Z", observedGeneration: 2}
- {type: Serving, status: "True", reason: ServingPreviousContent, message: "serving generation 1", lastTransitionTime: "2026-01-01T00:00:00Z", observedGeneration: 2}
- {type: Paused, status: "True", reason: Paused, message: "paused since 2026-01-01T00:00:00Z", lastTransitionTime: "2026-01-01T00:00:00Z", observedGeneration: 2}
resolvedSource: {type: Image, image: {ref: "quay.io/operatorhubio/catalog@sha256:0000000000000000000000000000000000000000000000000000000000000000"}}
contentHash: "sha256:abcd0123456789abcdef"
shortHash: "abcd01234567"
lastUnpacked: "2026-01-01T00:00:00Z"
contentURL: "https://catalogd.olmv1-system.svc/catalogs/printed/all.json"
servedGeneration: 1
counts: {packages: 1, channels: 2, bundles: 5}
`)
	suite.AssertPrinterColumns(t, catalogKind, "printed", []apiservertest.Column{
		{Name: "Name", Cell: "printed"},
		{Name: "Source", Cell: "Image"},
		{Name: "Serving", Cell: "True"},
		{Name: "Unpacked", Cell: "False"},
		{Name: "Hash", Cell: "abcd01234567"},
		{Name: "Content Hash", Priority: 1, Cell: "sha256:abcd0123456789abcdef"},
		{Name: "Priority", Priority: 1, Cell: "7"},
		{Name: "Bundles", Priority: 1, Cell: "5"},
		{Name: "Paused", Priority: 1, Cell: "True"},
		{Name: "Age"},
	})
}

func TestCatalogFieldsDocumented(t *testing.T) {
	suite.AssertFieldsDocumented(t, catalogKind)
}
