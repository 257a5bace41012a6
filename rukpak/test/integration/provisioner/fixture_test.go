package provisioner

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/olmv1/olmv1/platform/pki"
	rukpakv1alpha1 "github.com/olmv1/olmv1/rukpak/api/v1alpha1"
	"github.com/olmv1/olmv1/rukpak/internal/provisioner"
	"github.com/olmv1/olmv1/rukpak/internal/provisioner/certs"
	"github.com/olmv1/olmv1/rukpak/internal/provisioner/registryv1"
)

// fixtureDir is the registry+v1 unit tests' fixture bundle: two Deployments, permissions and
// clusterPermissions, validating and mutating webhooks, a two-version CRD.
var fixtureDir = filepath.Join("..", "..", "..", "internal", "provisioner", "registryv1", "testdata", "widgets")

const conversionDef = `  - type: ConversionWebhook
    generateName: cwidget.example.com
    deploymentName: widget-operator
    containerPort: 443
    targetPort: 9443
    admissionReviewVersions: [v1]
    sideEffects: None
    webhookPath: /convert
    conversionCRDs: [widgets.example.com]
  - type: MutatingAdmissionWebhook
`

func fixtureWithConversion(t *testing.T) fs.FS {
	t.Helper()
	m := fstest.MapFS{}
	err := fs.WalkDir(os.DirFS(fixtureDir), ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := fs.ReadFile(os.DirFS(fixtureDir), p)
		if strings.HasSuffix(p, ".clusterserviceversion.yaml") {
			b = []byte(strings.Replace(string(b), "  - type: MutatingAdmissionWebhook\n", conversionDef, 1))
		}
		m[p] = &fstest.MapFile{Data: b}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// TestFixtureBundleEveryModePassesAPIServerValidation covers what the real bundles do not: Roles in
// several watched namespaces, webhooks limited by namespaceSelector, and a CRD whose conversion is a
// webhook (the API server checks the conversion stanza against the CRD's versions).
func TestFixtureBundleEveryModePassesAPIServerValidation(t *testing.T) {
	certPEM, keyPEM, err := pki.GenerateCA("rukpak-integration", time.Now().Add(-time.Hour), 24*time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	ca, err := pki.ParseCA(certPEM, keyPEM)
	if err != nil {
		t.Fatal(err)
	}
	r := registryv1.New(registryv1.WithCertProvider(certs.NewSelfSigned(ca)))
	for _, tc := range []struct {
		name    string
		content fs.FS
		watch   []string
	}{
		{"AllNamespaces+conversion", fixtureWithConversion(t), nil},
		{"OwnNamespace", os.DirFS(fixtureDir), []string{installNS}},
		{"SingleNamespace", os.DirFS(fixtureDir), []string{"widgets-a"}},
		{"MultiNamespace", os.DirFS(fixtureDir), []string{"widgets-a", "widgets-b"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			objs, err := r.Render(context.Background(), provisioner.Request{
				Content: tc.content, Name: "fixture", InstallNamespace: installNS,
				Config: &rukpakv1alpha1.BundleConfig{WatchNamespaces: tc.watch},
			})
			if err != nil {
				t.Fatal(err)
			}
			for _, ns := range append([]string{installNS}, tc.watch...) {
				ensureNamespace(t, ns)
			}
			dryRunCreate(t, objs)
			if tc.watch == nil && !hasConversion(objs) {
				t.Fatalf("the CRD was rendered without its conversion webhook")
			}
		})
	}
}

func hasConversion(objs []client.Object) bool {
	for _, o := range objs {
		if u, ok := o.(*unstructured.Unstructured); ok && u.GetKind() == "CustomResourceDefinition" && u.GetName() == "widgets.example.com" {
			strategy, _, _ := unstructured.NestedString(u.Object, "spec", "conversion", "strategy")
			return strategy == "Webhook"
		}
	}
	return false
}
