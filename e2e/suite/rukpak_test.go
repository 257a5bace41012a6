package suite

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	rukpakv1alpha1 "github.com/olmv1/olmv1/rukpak/api/v1alpha1"
	"github.com/olmv1/olmv1/rukpak/pkg/imagebuild"
)

// rukpakNamespace is where rukpak keeps release Secrets in this suite.
const rukpakNamespace = "olmv1-system"

func init() {
	controllerArgs["rukpak"] = append(controllerArgs["rukpak"], "--namespace="+rukpakNamespace, "--log-level=debug")
}

var _ = Describe("rukpak BundleDeployments", Label("rukpak"), Ordered, func() {
	var c client.Client

	BeforeAll(func() {
		c = newClient(env.cfg)
	})

	It("installs a plain bundle, reverts drift, upgrades with pruning and uninstalls it", func(ctx SpecContext) {
		const name = "e2e-plain"
		ns := createNamespace(ctx, "e2e-plain-")
		ref := bdPushPlainBundle(ctx, "v1", map[string]string{
			"settings.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\ndata:\n  mode: one\n",
			"extra.yaml":    "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: extra\ndata:\n  a: b\n",
			"web.yaml":      bdWebDeployment,
		})
		bd := &rukpakv1alpha1.BundleDeployment{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: rukpakv1alpha1.BundleDeploymentSpec{
				ProvisionerClassName: rukpakv1alpha1.ProvisionerPlain,
				InstallNamespace:     ns,
				Source:               bdImageSource(ref),
			},
		}
		Expect(c.Create(ctx, bd)).To(Succeed())
		DeferCleanup(func(ctx SpecContext) { _ = c.Delete(ctx, bd) })

		By("reporting Unpacked, Installed and Healthy (kwok makes the Deployment Available)")
		got := waitCondition(ctx, c, bundleDeploymentNamed(name), rukpakv1alpha1.TypeHealthy, "True", 2*time.Minute, anyGeneration())
		Expect(got.Status.InstalledRevision).To(Equal(int64(1)))
		Expect(got.Status.ResolvedSource).NotTo(BeNil())
		Expect(got.Status.ResolvedSource.Image.Ref).To(ContainSubstring("@sha256:"))
		Expect(got.Status.ContentHash).To(HavePrefix("sha256:"))
		Expect(meta.IsStatusConditionTrue(got.Status.Conditions, rukpakv1alpha1.TypeUnpacked)).To(BeTrue())
		Expect(meta.IsStatusConditionTrue(got.Status.Conditions, rukpakv1alpha1.TypeInstalled)).To(BeTrue())

		By("storing the revision as a Helm release Secret in rukpak's namespace")
		secrets := &corev1.SecretList{}
		Expect(c.List(ctx, secrets, client.InNamespace(rukpakNamespace), client.MatchingLabels{"owner": "helm", "name": name})).To(Succeed())
		Expect(secrets.Items).To(HaveLen(1))

		By("reverting a change made by hand")
		cm := &corev1.ConfigMap{}
		Expect(c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "settings"}, cm)).To(Succeed())
		cm.Data["mode"] = "hand-edited"
		Expect(c.Update(ctx, cm)).To(Succeed())
		Eventually(func(g Gomega) {
			g.Expect(c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "settings"}, cm)).To(Succeed())
			g.Expect(cm.Data).To(HaveKeyWithValue("mode", "one"))
		}).WithContext(ctx).WithTimeout(time.Minute).WithPolling(250 * time.Millisecond).Should(Succeed())

		By("upgrading to a bundle without ConfigMap extra: revision 2, extra pruned")
		ref2 := bdPushPlainBundle(ctx, "v2", map[string]string{
			"settings.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\ndata:\n  mode: two\n",
			"web.yaml":      bdWebDeployment,
		})
		Expect(c.Get(ctx, client.ObjectKey{Name: name}, bd)).To(Succeed())
		bd.Spec.Source = bdImageSource(ref2)
		Expect(c.Update(ctx, bd)).To(Succeed())
		waitCondition(ctx, c, got, rukpakv1alpha1.TypeHealthy, "True", 2*time.Minute, anyGeneration(), andAlso(func(g Gomega) {
			g.Expect(got.Status.InstalledRevision).To(Equal(int64(2)))
		}))
		Expect(c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "extra"}, &corev1.ConfigMap{})).To(Satisfy(apierrors.IsNotFound))
		Expect(got.Status.History).To(HaveLen(2))

		By("uninstalling everything when the BundleDeployment is deleted")
		Expect(c.Delete(ctx, bd)).To(Succeed())
		bdExpectNothingLeft(ctx, c, name, ns)
	})

	It("installs strimzi 0.33.0 (registry+v1), upgrades it to 0.34.0 and uninstalls it", func(ctx SpecContext) {
		root := os.Getenv("OLMV1_TESTDATA")
		if root == "" {
			root = filepath.Join(env.repoRoot, "..", "shared", "testdata")
		}
		dir := filepath.Join(root, "bundles", "strimzi-kafka-operator")
		if _, err := os.Stat(dir); err != nil {
			Skip(fmt.Sprintf("strimzi bundles not found at %s (set OLMV1_TESTDATA): %v", dir, err))
		}
		const name = "strimzi"
		ns := createNamespace(ctx, "strimzi-")
		ref1 := bdPushRegistryBundle(ctx, filepath.Join(dir, "0.33.0"), "strimzi:0.33.0")
		ref2 := bdPushRegistryBundle(ctx, filepath.Join(dir, "0.34.0"), "strimzi:0.34.0")

		bd := &rukpakv1alpha1.BundleDeployment{
			ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: map[string]string{"core.rukpak.io/delete-crds-on-uninstall": "true"}},
			Spec: rukpakv1alpha1.BundleDeploymentSpec{
				ProvisionerClassName: rukpakv1alpha1.ProvisionerRegistry,
				InstallNamespace:     ns,
				Source:               bdImageSource(ref1),
			},
		}
		Expect(c.Create(ctx, bd)).To(Succeed())
		DeferCleanup(func(ctx SpecContext) { _ = c.Delete(ctx, bd) })

		got := waitCondition(ctx, c, bundleDeploymentNamed(name), rukpakv1alpha1.TypeHealthy, "True", 3*time.Minute, anyGeneration())
		Expect(got.Status.InstalledRevision).To(Equal(int64(1)))
		crd := &apiextensionsv1.CustomResourceDefinition{}
		Expect(c.Get(ctx, client.ObjectKey{Name: "kafkas.kafka.strimzi.io"}, crd)).To(Succeed())

		By("upgrading to 0.34.0")
		Expect(c.Get(ctx, client.ObjectKey{Name: name}, bd)).To(Succeed())
		bd.Spec.Source = bdImageSource(ref2)
		Expect(c.Update(ctx, bd)).To(Succeed())
		waitCondition(ctx, c, got, rukpakv1alpha1.TypeHealthy, "True", 3*time.Minute, anyGeneration(), andAlso(func(g Gomega) {
			g.Expect(got.Status.InstalledRevision).To(Equal(int64(2)), "Installed: %v", meta.FindStatusCondition(got.Status.Conditions, rukpakv1alpha1.TypeInstalled))
		}))

		By("deleting it: nothing it installed is left (CRDs included, as the annotation asks)")
		Expect(c.Delete(ctx, bd)).To(Succeed())
		bdExpectNothingLeft(ctx, c, name, ns)
		// CRD removal is asynchronous: the API server first deletes every custom resource of it, and
		// its CRD finalizer retries with a growing back-off when the CRD's storage was (re)initializing
		// (an upgrade just changed it). rukpak's part is the deletion: every strimzi CRD gone or being
		// deleted. Then wait for every one to be gone, so that no later spec installing strimzi (chaos)
		// meets one still owned by this BundleDeployment: on a loaded machine (a CI run at load 20) the
		// finalizer's back-off alone took 4 min 45 s after one "storage is (re)initializing", hence 10.
		strimziCRDs := func(g Gomega) (left, notDeleting []string) {
			crds := &apiextensionsv1.CustomResourceDefinitionList{}
			g.Expect(c.List(ctx, crds)).To(Succeed())
			for _, d := range crds.Items {
				if strings.HasSuffix(d.Name, ".strimzi.io") {
					left = append(left, d.Name)
					if d.DeletionTimestamp == nil {
						notDeleting = append(notDeleting, d.Name)
					}
				}
			}
			return left, notDeleting
		}
		Eventually(func(g Gomega) {
			_, notDeleting := strimziCRDs(g)
			g.Expect(notDeleting).To(BeEmpty(), "strimzi CRDs not deleted by the uninstall")
		}).WithContext(ctx).WithTimeout(time.Minute).WithPolling(250 * time.Millisecond).Should(Succeed())
		Eventually(func(g Gomega) {
			left, _ := strimziCRDs(g)
			g.Expect(left).To(BeEmpty(), "strimzi CRDs deleted by the uninstall but still there (the API server's CRD finalizer has not finished)")
		}).WithContext(ctx).WithTimeout(10 * time.Minute).WithPolling(time.Second).Should(Succeed())
	})
})

const bdWebDeployment = `apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  replicas: 1
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers:
      - {name: web, image: registry.invalid/web:1}
`

func bdImageSource(ref string) rukpakv1alpha1.Source {
	return rukpakv1alpha1.Source{Type: rukpakv1alpha1.SourceTypeImage, Image: &rukpakv1alpha1.ImageSource{Ref: ref}}
}

// bdPushPlainBundle builds a plain bundle image (manifests/ with files) in Go and pushes it to the
// local registry, returning the tag reference.
func bdPushPlainBundle(ctx context.Context, tag string, files map[string]string) string {
	dir := GinkgoT().TempDir()
	Expect(os.MkdirAll(filepath.Join(dir, "manifests"), 0o755)).To(Succeed())
	for n, content := range files {
		Expect(os.WriteFile(filepath.Join(dir, "manifests", n), []byte(content), 0o644)).To(Succeed())
	}
	img, err := imagebuild.PlainBundleImage(dir)
	Expect(err).NotTo(HaveOccurred())
	ref := env.registry.Addr + "/bundles/e2e-plain:" + tag
	_, err = imagebuild.Push(ctx, img, ref, imagebuild.WithInsecure())
	Expect(err).NotTo(HaveOccurred())
	return ref
}

func bdPushRegistryBundle(ctx context.Context, dir, repoTag string) string {
	img, err := imagebuild.RegistryV1BundleImage(dir)
	Expect(err).NotTo(HaveOccurred())
	ref := env.registry.Addr + "/bundles/" + repoTag
	_, err = imagebuild.Push(ctx, img, ref, imagebuild.WithInsecure())
	Expect(err).NotTo(HaveOccurred())
	return ref
}

// bdExpectNothingLeft waits until the BundleDeployment is gone and no object carries its owner label,
// and its release Secrets are deleted.
func bdExpectNothingLeft(ctx context.Context, c client.Client, name, ns string) {
	owned := client.MatchingLabels{"core.rukpak.io/owner-name": name}
	Eventually(func(g Gomega) {
		g.Expect(c.Get(ctx, client.ObjectKey{Name: name}, &rukpakv1alpha1.BundleDeployment{})).To(Satisfy(apierrors.IsNotFound))
		for _, l := range []client.ObjectList{
			&appsv1.DeploymentList{}, &corev1.ConfigMapList{}, &corev1.ServiceAccountList{}, &corev1.ServiceList{},
			&rbacv1.RoleList{}, &rbacv1.RoleBindingList{}, &rbacv1.ClusterRoleList{}, &rbacv1.ClusterRoleBindingList{},
		} {
			g.Expect(c.List(ctx, l, owned)).To(Succeed())
			g.Expect(meta.LenList(l)).To(BeZero(), "%T left after uninstall", l)
		}
		secrets := &corev1.SecretList{}
		g.Expect(c.List(ctx, secrets, client.InNamespace(rukpakNamespace), client.MatchingLabels{"owner": "helm", "name": name})).To(Succeed())
		g.Expect(secrets.Items).To(BeEmpty(), "release Secrets left after uninstall")
	}).WithContext(ctx).WithTimeout(2 * time.Minute).WithPolling(500 * time.Millisecond).Should(Succeed())
}
