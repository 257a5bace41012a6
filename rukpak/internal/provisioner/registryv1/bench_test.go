package registryv1

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/olmv1/olmv1/rukpak/internal/provisioner"
	"github.com/olmv1/olmv1/rukpak/internal/provisioner/certs"
)

// benchmarkRender renders a real bundle from disk (parsing included), as the controller does on
// every reconcile of a changed BundleDeployment.
func benchmarkRender(b *testing.B, bundle string, watchNS []string) {
	root := os.Getenv("OLMV1_TESTDATA")
	if root == "" {
		root = filepath.Join("..", "..", "..", "..", "..", "shared", "testdata")
	}
	dir := filepath.Join(root, "bundles", bundle)
	if _, err := os.Stat(dir); err != nil {
		b.Skipf("bundle %s not found (set OLMV1_TESTDATA): %v", dir, err)
	}
	r := New(WithCertProvider(certs.NewSelfSigned(testCA)))
	req := provisioner.Request{Content: os.DirFS(dir), Name: "bench", InstallNamespace: "operators", Config: watch(watchNS...)}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := r.Render(context.Background(), req); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkRenderStrimziMultiNamespace(b *testing.B) {
	benchmarkRender(b, "strimzi-kafka-operator/0.35.0", []string{"a", "b", "c"})
}

func BenchmarkRenderKubevirtWebhooks(b *testing.B) {
	benchmarkRender(b, "community-kubevirt-hyperconverged/1.17.3", nil)
}
