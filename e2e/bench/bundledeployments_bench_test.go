package bench

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"

	"github.com/olmv1/olmv1/rukpak/pkg/imagebuild"
)

// scaleBundle is the plain bundle every BundleDeployment of BenchmarkBundleDeploymentsScale installs:
// a ConfigMap, a ServiceAccount and a Deployment (kwok makes it Available).
var scaleBundle = map[string]string{
	"settings.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\ndata:\n  mode: one\n",
	"sa.yaml":       "apiVersion: v1\nkind: ServiceAccount\nmetadata:\n  name: web\n",
	"web.yaml": `apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  replicas: 1
  selector:
    matchLabels: {app: web}
  template:
    metadata:
      labels: {app: web}
    spec:
      serviceAccountName: web
      containers:
      - name: web
        image: registry.example.test/web:v1
`,
}

// Measurement windows of BenchmarkBundleDeploymentsScale: after every BundleDeployment is Healthy,
// rukpak is left alone for scaleSettle, then its CPU use is measured over scaleIdleWindow.
const (
	scaleSettle     = 10 * time.Second
	scaleIdleWindow = 30 * time.Second
)

// BenchmarkBundleDeploymentsScale is issue 7's benchmark: rukpak's RSS and idle CPU with 1, 10 and
// 100 BundleDeployments installed (plain bundles, each into its own namespace) on the local control
// plane. Each sub-benchmark adds BundleDeployments up to its count (they accumulate) and reports
//
//	rukpak-MB        rukpak's RSS once all are Healthy and it has settled (target < 100 MB at 100)
//	idle-cpu-%       rukpak's CPU use over 30 s with nothing changing (target: near zero)
//	s-to-healthy     time from creating the new BundleDeployments until all are Healthy
//	rukpak-cpu-s     CPU time rukpak used for that
//
// It runs before BenchmarkOperatorsInstall (file order), so rukpak has installed nothing else.
func BenchmarkBundleDeploymentsScale(b *testing.B) {
	startOLM(b)
	ctx := context.Background()
	cs, err := kubernetes.NewForConfig(olm.env.Config)
	if err != nil {
		b.Fatal(err)
	}
	ref := pushPlainBundle(ctx, b, "scale", scaleBundle)
	b.Logf("rukpak RSS before: %.1f MB", controllerRSS("rukpak"))
	created := 0
	defer func() {
		// Uninstall them, so that the benchmarks that follow start from an empty cluster.
		for i := 0; i < created; i++ {
			name := fmt.Sprintf("scale-%03d", i)
			_ = olm.dc.Resource(bdGVR).Delete(ctx, name, metav1.DeleteOptions{})
			_ = cs.CoreV1().Namespaces().Delete(ctx, name, metav1.DeleteOptions{})
		}
		if err := waitNoBundleDeployments(ctx, "scale", 5*time.Minute); err != nil {
			b.Error(err)
		}
	}()
	for _, n := range []int{1, 10, 100} {
		b.Run(fmt.Sprintf("BundleDeployments=%d", n), func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				cpu0, start := controllerCPU("rukpak"), time.Now()
				for ; created < n; created++ {
					createScaleBD(ctx, b, cs, fmt.Sprintf("scale-%03d", created), ref)
				}
				if err := waitBundleDeploymentsHealthy(ctx, "scale", n, 10*time.Minute); err != nil {
					b.Fatal(err)
				}
				took, cpu := time.Since(start), controllerCPU("rukpak")-cpu0
				b.StopTimer()
				time.Sleep(scaleSettle) // a measurement window, not a synchronisation: nothing is waited for
				idle0 := controllerCPU("rukpak")
				time.Sleep(scaleIdleWindow)
				idle := controllerCPU("rukpak") - idle0
				b.ReportMetric(controllerRSS("rukpak"), "rukpak-MB")
				b.ReportMetric(100*idle/scaleIdleWindow.Seconds(), "idle-cpu-%")
				b.ReportMetric(took.Seconds(), "s-to-healthy")
				b.ReportMetric(cpu, "rukpak-cpu-s")
				b.StartTimer()
			}
		})
	}
}

// pushPlainBundle builds a plain bundle image from files (manifests/<name>) and pushes it as
// <registry>/bundles/<repo>:v1.
func pushPlainBundle(ctx context.Context, b *testing.B, repo string, files map[string]string) string {
	b.Helper()
	dir := b.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "manifests"), 0o755); err != nil {
		b.Fatal(err)
	}
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(dir, "manifests", name), []byte(content), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	img, err := imagebuild.PlainBundleImage(dir)
	if err != nil {
		b.Fatal(err)
	}
	ref := olm.env.Registry.Addr + "/bundles/" + repo + ":v1"
	if _, err := imagebuild.Push(ctx, img, ref, imagebuild.WithInsecure()); err != nil {
		b.Fatal(err)
	}
	return ref
}

// createScaleBD creates namespace name and a plain BundleDeployment name of ref installing into it.
func createScaleBD(ctx context.Context, b *testing.B, cs kubernetes.Interface, name, ref string) {
	b.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if _, err := cs.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		b.Fatal(err)
	}
	bd := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "core.rukpak.io/v1alpha1", "kind": "BundleDeployment",
		"metadata": map[string]any{"name": name},
		"spec": map[string]any{
			"provisionerClassName": "core-rukpak-io-plain", "installNamespace": name,
			"source": map[string]any{"type": "Image", "image": map[string]any{"ref": ref}},
		},
	}}
	if _, err := olm.dc.Resource(bdGVR).Create(ctx, bd, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		b.Fatal(err)
	}
}

// waitBundleDeploymentsHealthy polls until n BundleDeployments named prefix-* are Healthy.
func waitBundleDeploymentsHealthy(ctx context.Context, prefix string, n int, timeout time.Duration) error {
	var healthy int
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		list, err := olm.dc.Resource(bdGVR).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		healthy = 0
		for i := range list.Items {
			if strings.HasPrefix(list.Items[i].GetName(), prefix+"-") && conditionTrue(&list.Items[i], "Healthy") {
				healthy++
			}
		}
		return healthy == n, nil
	})
	if err != nil {
		return fmt.Errorf("%d of %d BundleDeployments Healthy: %w", healthy, n, err)
	}
	return nil
}
