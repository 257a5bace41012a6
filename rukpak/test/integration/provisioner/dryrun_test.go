package provisioner

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"testing/fstest"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/olmv1/olmv1/platform/pki"
	rukpakv1alpha1 "github.com/olmv1/olmv1/rukpak/api/v1alpha1"
	"github.com/olmv1/olmv1/rukpak/internal/provisioner"
	"github.com/olmv1/olmv1/rukpak/internal/provisioner/certs"
	"github.com/olmv1/olmv1/rukpak/internal/provisioner/plain"
	"github.com/olmv1/olmv1/rukpak/internal/provisioner/registryv1"
)

const installNS = "operators"

// bundlesDir is $OLMV1_TESTDATA/bundles, by default the shared testdata next to the repository.
// Unlike the unit tests, this tier fails when the bundles are missing: they are what it checks.
func bundlesDir(t *testing.T) string {
	t.Helper()
	root := os.Getenv("OLMV1_TESTDATA")
	if root == "" {
		root = filepath.Join("..", "..", "..", "..", "..", "shared", "testdata")
	}
	dir := filepath.Join(root, "bundles")
	if _, err := os.Stat(dir); err != nil {
		t.Fatalf("real bundles not found at %s (set OLMV1_TESTDATA to the shared testdata directory): %v", dir, err)
	}
	return dir
}

func ensureNamespace(t *testing.T, name string) {
	t.Helper()
	ns := &corev1.Namespace{}
	ns.Name = name
	if err := cl.Create(context.Background(), ns); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatalf("creating namespace %s: %v", name, err)
	}
}

// dryRunCreate sends every object to the API server with dryRun=All: CRDs first, then the rest in
// rendering order. Nothing is stored, so bundles sharing cluster-scoped names do not collide.
func dryRunCreate(t *testing.T, objs []client.Object) {
	t.Helper()
	dryRunCreateWith(t, cl, objs)
}

func dryRunCreateWith(t *testing.T, cl client.Client, objs []client.Object) {
	t.Helper()
	ctx := context.Background()
	for pass := 0; pass < 2; pass++ {
		for _, o := range objs {
			isCRD := o.GetObjectKind().GroupVersionKind().Kind == "CustomResourceDefinition"
			if isCRD != (pass == 0) {
				continue
			}
			obj := o.DeepCopyObject().(client.Object)
			if err := cl.Create(ctx, obj, client.DryRunAll); err != nil {
				t.Errorf("API server rejected %s %s/%s: %v", o.GetObjectKind().GroupVersionKind().Kind, o.GetNamespace(), o.GetName(), err)
			}
		}
	}
}

func TestRegistryV1RealBundlesPassAPIServerValidation(t *testing.T) {
	dir := bundlesDir(t)
	certPEM, keyPEM, err := pki.GenerateCA("rukpak-integration", time.Now().Add(-time.Hour), 24*time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	ca, err := pki.ParseCA(certPEM, keyPEM)
	if err != nil {
		t.Fatal(err)
	}
	renderer := registryv1.New(registryv1.WithCertProvider(certs.NewSelfSigned(ca)))
	for _, tc := range []struct {
		bundle string
		watch  []string
	}{
		{"strimzi-kafka-operator/0.33.0", nil},
		{"strimzi-kafka-operator/0.33.0", []string{installNS}},
		{"strimzi-kafka-operator/0.33.0", []string{"kafka"}},
		{"strimzi-kafka-operator/0.33.0", []string{"kafka-a", "kafka-b"}},
		{"strimzi-kafka-operator/0.34.0", nil},
		{"strimzi-kafka-operator/0.34.0", []string{"kafka-a", "kafka-b"}},
		{"strimzi-kafka-operator/0.35.0", nil},
		{"strimzi-kafka-operator/0.35.0", []string{"kafka"}},
		{"community-kubevirt-hyperconverged/1.17.3", nil},
		{"cert-manager/1.16.5", nil},
		{"gitlab-operator-kubernetes/3.3.0", []string{installNS}},
		{"rabbitmq-messaging-topology-operator/1.19.3", nil},
		{"rabbitmq-messaging-topology-operator/1.19.3", []string{"rabbit-a", "rabbit-b"}},
		{"node-healthcheck-operator/0.8.0", nil},
	} {
		name := tc.bundle
		if len(tc.watch) > 0 {
			name += "/" + tc.watch[0]
		}
		t.Run(name, func(t *testing.T) {
			objs, err := renderer.Render(context.Background(), provisioner.Request{
				Content: os.DirFS(filepath.Join(dir, tc.bundle)), Name: "it", InstallNamespace: installNS,
				Config: &rukpakv1alpha1.BundleConfig{WatchNamespaces: tc.watch},
			})
			if err != nil {
				t.Fatal(err)
			}
			if len(objs) == 0 {
				t.Fatal("rendered nothing")
			}
			for _, ns := range append([]string{installNS}, tc.watch...) {
				ensureNamespace(t, ns)
			}
			dryRunCreate(t, objs)
		})
	}
}

func TestCertManagerAndServiceCAObjectsPassAPIServerValidation(t *testing.T) {
	// The cert-manager bundle's own CRDs make its Certificate and Issuer kinds known; they are
	// created for real (not dry-run) so that cert-manager objects can then be dry-run created.
	dir := bundlesDir(t)
	ensureNamespace(t, installNS)
	cmObjs, err := registryv1.New(registryv1.WithCertProvider(certs.NewOpenShiftServiceCA())).Render(context.Background(), provisioner.Request{
		Content: os.DirFS(filepath.Join(dir, "cert-manager", "1.16.5")), Name: "cm", InstallNamespace: installNS,
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, o := range cmObjs {
		if o.GetObjectKind().GroupVersionKind().Kind != "CustomResourceDefinition" {
			continue
		}
		if err := cl.Create(ctx, o.DeepCopyObject().(client.Object)); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatalf("creating CRD %s: %v", o.GetName(), err)
		}
	}
	waitForKind(t, "cert-manager.io/v1", "Certificate")
	waitForKind(t, "cert-manager.io/v1", "Issuer")
	mapper, err := newMapper()
	if err != nil {
		t.Fatal(err)
	}
	fresh, err := client.New(cfg, client.Options{Mapper: mapper})
	if err != nil {
		t.Fatal(err)
	}

	objs, err := registryv1.New(registryv1.WithCertProvider(certs.NewCertManager(nil))).Render(ctx, provisioner.Request{
		Content: os.DirFS(filepath.Join(dir, "rabbitmq-messaging-topology-operator", "1.19.3")), Name: "it", InstallNamespace: installNS,
	})
	if err != nil {
		t.Fatal(err)
	}
	if n := countKind(objs, "Certificate") + countKind(objs, "Issuer"); n != 2 {
		t.Fatalf("want one Certificate and one Issuer, got %d", n)
	}
	dryRunCreateWith(t, fresh, objs)
	var rest []client.Object
	for _, o := range cmObjs {
		if o.GetObjectKind().GroupVersionKind().Kind != "CustomResourceDefinition" {
			rest = append(rest, o)
		}
	}
	dryRunCreateWith(t, fresh, rest)
}

func countKind(objs []client.Object, kind string) int {
	n := 0
	for _, o := range objs {
		if o.GetObjectKind().GroupVersionKind().Kind == kind {
			n++
		}
	}
	return n
}

func waitForKind(t *testing.T, apiVersion, kind string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		mapper, err := newMapper()
		if err == nil {
			if _, err = mapper.RESTMapping(parseGK(apiVersion, kind)); err == nil {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s %s never became served: %v", apiVersion, kind, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func TestPlainBundlePassesAPIServerValidation(t *testing.T) {
	ensureNamespace(t, installNS)
	content := fstest.MapFS{
		"manifests/all.yaml": &fstest.MapFile{Data: []byte(`apiVersion: v1
kind: ConfigMap
metadata:
  name: plain-config
data: {a: b}
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: plain-app
spec:
  selector: {matchLabels: {app: plain}}
  template:
    metadata: {labels: {app: plain}}
    spec:
      containers: [{name: app, image: example.com/app:v1}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: plain-reader
rules: [{apiGroups: [""], resources: [pods], verbs: [get]}]
`)},
	}
	objs, err := plain.New().Render(context.Background(), provisioner.Request{Content: content, Name: "plain", InstallNamespace: installNS})
	if err != nil {
		t.Fatal(err)
	}
	dryRunCreate(t, objs)
}

// TestDryRunRejectsInvalidObjects shows the harness is not vacuous: a rendered object the API
// server must refuse (a Deployment whose selector does not match its pod labels) is reported.
func TestDryRunRejectsInvalidObjects(t *testing.T) {
	ensureNamespace(t, installNS)
	content := fstest.MapFS{"manifests/bad.yaml": &fstest.MapFile{Data: []byte(`apiVersion: apps/v1
kind: Deployment
metadata:
  name: bad
spec:
  selector: {matchLabels: {app: a}}
  template:
    metadata: {labels: {app: b}}
    spec:
      containers: [{name: app, image: example.com/app:v1}]
`)}}
	objs, err := plain.New().Render(context.Background(), provisioner.Request{Content: content, Name: "bad", InstallNamespace: installNS})
	if err != nil {
		t.Fatal(err)
	}
	err = cl.Create(context.Background(), objs[0], client.DryRunAll)
	if !apierrors.IsInvalid(err) {
		t.Fatalf("want an Invalid error from the API server, got %v", err)
	}
}
