package suite

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
	"sigs.k8s.io/controller-runtime/pkg/client"

	rukpakv1alpha1 "github.com/olmv1/olmv1/rukpak/api/v1alpha1"
	"github.com/olmv1/olmv1/rukpak/pkg/imagebuild"
	"github.com/olmv1/olmv1/rukpak/pkg/source/sourcetest"
)

// The helm-kustomize specs install a Helm chart pushed to the local registry as an OCI artifact, and
// a kustomize overlay from a git repository served over smart HTTP on 127.0.0.1, through
// BundleDeployments, as rukpak's core-rukpak-io-helm and core-rukpak-io-kustomize provisioners.
var _ = Describe("rukpak Helm and kustomize provisioners", Label("helm-kustomize"), Ordered, func() {
	var c client.Client

	BeforeAll(func() {
		c = newClient(env.cfg)
	})

	It("installs a Helm chart from an OCI artifact, upgrades it with new values and uninstalls it", func(ctx SpecContext) {
		const name = "e2e-helm-greeter"
		ns := createNamespace(ctx, "e2e-helm-")
		img, err := imagebuild.HelmChartArtifact(filepath.Join(env.repoRoot, "e2e", "testdata", "helm-greeter"))
		Expect(err).NotTo(HaveOccurred())
		ref := env.registry.Addr + "/charts/greeter:0.1.0"
		_, err = imagebuild.Push(ctx, img, ref, imagebuild.WithInsecure())
		Expect(err).NotTo(HaveOccurred())

		bd := &rukpakv1alpha1.BundleDeployment{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: rukpakv1alpha1.BundleDeploymentSpec{
				ProvisionerClassName: rukpakv1alpha1.ProvisionerHelm,
				InstallNamespace:     ns,
				Source:               bdImageSource(ref),
				Config:               &rukpakv1alpha1.BundleConfig{Values: &apiextensionsv1.JSON{Raw: []byte(`{"greeting":"hello from values"}`)}},
			},
		}
		Expect(c.Create(ctx, bd)).To(Succeed())
		DeferCleanup(func(ctx SpecContext) { _ = c.Delete(ctx, bd) })

		By("reporting Installed and Healthy at revision 1, with the inline values rendered")
		got := waitCondition(ctx, c, bundleDeploymentNamed(name), rukpakv1alpha1.TypeHealthy, "True", 2*time.Minute, anyGeneration())
		Expect(got.Status.InstalledRevision).To(Equal(int64(1)))
		Expect(meta.IsStatusConditionTrue(got.Status.Conditions, rukpakv1alpha1.TypeInstalled)).To(BeTrue())
		Expect(got.Status.ResolvedSource.Image.Ref).To(ContainSubstring("@sha256:"))
		cm := &corev1.ConfigMap{}
		Expect(c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name + "-settings"}, cm)).To(Succeed())
		Expect(cm.Data).To(HaveKeyWithValue("greeting", "hello from values"))
		dep := &appsv1.Deployment{}
		Expect(c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, dep)).To(Succeed())
		Expect(*dep.Spec.Replicas).To(Equal(int32(1)))

		By("upgrading with values from a Secret and new inline values: revision 2")
		_, err = env.clientset.CoreV1().Secrets(ns).Create(ctx, &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Name: "greeter-values"},
			StringData: map[string]string{"values.yaml": "replicaCount: 3\ngreeting: from the secret\n"},
		}, metav1.CreateOptions{})
		Expect(err).NotTo(HaveOccurred())
		Expect(c.Get(ctx, client.ObjectKey{Name: name}, bd)).To(Succeed())
		bd.Spec.Config = &rukpakv1alpha1.BundleConfig{
			ValuesFrom: []rukpakv1alpha1.ValuesReference{{Kind: "Secret", Name: "greeter-values"}},
			Values:     &apiextensionsv1.JSON{Raw: []byte(`{"greeting":"hello again"}`)},
		}
		Expect(c.Update(ctx, bd)).To(Succeed())
		waitCondition(ctx, c, got, rukpakv1alpha1.TypeHealthy, "True", 2*time.Minute, anyGeneration(), andAlso(func(g Gomega) {
			g.Expect(got.Status.InstalledRevision).To(Equal(int64(2)), "Installed: %v", meta.FindStatusCondition(got.Status.Conditions, rukpakv1alpha1.TypeInstalled))
		}))
		Expect(got.Status.History).To(HaveLen(2))
		Expect(c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name + "-settings"}, cm)).To(Succeed())
		Expect(cm.Data).To(HaveKeyWithValue("greeting", "hello again"), "inline values win over valuesFrom")
		Expect(c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, dep)).To(Succeed())
		Expect(*dep.Spec.Replicas).To(Equal(int32(3)), "replicaCount comes from the Secret")

		By("reporting values that break values.schema.json, and keeping revision 2 installed")
		Expect(c.Get(ctx, client.ObjectKey{Name: name}, bd)).To(Succeed())
		bd.Spec.Config.Values = &apiextensionsv1.JSON{Raw: []byte(`{"replicaCount":"three"}`)}
		Expect(c.Update(ctx, bd)).To(Succeed())
		waitCondition(ctx, c, got, rukpakv1alpha1.TypeUnpacked, "False", time.Minute, withReason("InvalidValues"), andAlso(func(g Gomega) {
			g.Expect(conditionMessage(got, rukpakv1alpha1.TypeUnpacked)).To(ContainSubstring("replicaCount"))
		}))
		Expect(got.Status.InstalledRevision).To(Equal(int64(2)))

		By("uninstalling everything when the BundleDeployment is deleted")
		Expect(c.Delete(ctx, bd)).To(Succeed())
		bdExpectNothingLeft(ctx, c, name, ns)
	})

	It("installs a catalog bundle whose olm.bundle.mediatype is helm through an Operator", func(ctx SpecContext) {
		const pkg, opName = "greeter", "e2e-helm-operator"
		dc, err := dynamic.NewForConfig(env.cfg)
		Expect(err).NotTo(HaveOccurred())
		ns := createNamespace(ctx, "e2e-helm-op-")

		By("pushing the chart and a catalog whose bundle points at it with olm.bundle.mediatype helm")
		img, err := imagebuild.HelmChartArtifact(filepath.Join(env.repoRoot, "e2e", "testdata", "helm-greeter"))
		Expect(err).NotTo(HaveOccurred())
		chartRef := env.registry.Addr + "/charts/greeter-catalog:0.1.0"
		_, err = imagebuild.Push(ctx, img, chartRef, imagebuild.WithInsecure())
		Expect(err).NotTo(HaveOccurred())
		catalogRef := newFixtureCatalog().
			SingleBundlePackage(pkg, "0.1.0", chartRef, fbcProperty{Type: "olm.bundle.mediatype", Value: "helm"}).
			Push(ctx, "greeter-index", "v1")
		catalogs := dc.Resource(catalogGVR)
		_, err = catalogs.Create(ctx, &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "catalogd.operatorframework.io/v1alpha1", "kind": "Catalog",
			"metadata": map[string]any{"name": "e2e-helm-catalog"},
			"spec":     map[string]any{"source": map[string]any{"type": "Image", "image": map[string]any{"ref": catalogRef}}},
		}}, metav1.CreateOptions{})
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(func(ctx SpecContext) { _ = catalogs.Delete(ctx, "e2e-helm-catalog", metav1.DeleteOptions{}) })
		waitCondition(ctx, c, catalogNamed("e2e-helm-catalog"), "Serving", "True", 2*time.Minute, anyGeneration())

		By("creating an Operator with Helm values: its BundleDeployment uses core-rukpak-io-helm")
		ops := dc.Resource(operatorGVR)
		_, err = ops.Create(ctx, &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "operators.operatorframework.io/v1alpha1", "kind": "Operator",
			"metadata": map[string]any{"name": opName},
			"spec": map[string]any{"packageName": pkg, "installNamespace": ns,
				"config": map[string]any{"values": map[string]any{"greeting": "hello from the catalog"}}},
		}}, metav1.CreateOptions{})
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(func(ctx SpecContext) { _ = ops.Delete(ctx, opName, metav1.DeleteOptions{}) })
		bd := waitCondition(ctx, c, bundleDeploymentNamed(opName), rukpakv1alpha1.TypeHealthy, "True", 2*time.Minute, anyGeneration())
		Expect(bd.Spec.ProvisionerClassName).To(Equal(rukpakv1alpha1.ProvisionerHelm))
		Expect(bd.Spec.Source.Image.Ref).To(Equal(chartRef))
		cm := &corev1.ConfigMap{}
		Expect(c.Get(ctx, client.ObjectKey{Namespace: ns, Name: opName + "-settings"}, cm)).To(Succeed())
		Expect(cm.Data).To(HaveKeyWithValue("greeting", "hello from the catalog"))
		waitCondition(ctx, c, operatorNamed(opName), "Installed", "True", time.Minute, anyGeneration())

		By("deleting the Operator: its BundleDeployment and everything the chart installed go")
		Expect(ops.Delete(ctx, opName, metav1.DeleteOptions{})).To(Succeed())
		bdExpectNothingLeft(ctx, c, opName, ns)
	})

	It("installs a kustomize overlay from a git repository and uninstalls it", func(ctx SpecContext) {
		const name = "e2e-kustomize-greeter"
		ns := createNamespace(ctx, "e2e-kustomize-")

		By("serving the fixture as a git repository over smart HTTP on 127.0.0.1")
		repo := sourcetest.NewRepo(GinkgoTB())
		dir := filepath.Join(env.repoRoot, "e2e", "testdata", "kustomize-greeter")
		Expect(fs.WalkDir(os.DirFS(dir), ".", func(p string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			b, err := os.ReadFile(filepath.Join(dir, p))
			if err == nil {
				repo.WriteFile(p, string(b))
			}
			return err
		})).To(Succeed())
		commit := repo.Commit("greeter base and e2e overlay")
		server := sourcetest.NewGitServer(GinkgoTB())
		url := server.Add("greeter", repo)
		Expect(url).To(HavePrefix("http://127.0.0.1:"))

		bd := &rukpakv1alpha1.BundleDeployment{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: rukpakv1alpha1.BundleDeploymentSpec{
				ProvisionerClassName: rukpakv1alpha1.ProvisionerKustomize,
				InstallNamespace:     ns,
				Source: rukpakv1alpha1.Source{Type: rukpakv1alpha1.SourceTypeGit, Git: &rukpakv1alpha1.GitSource{
					Repository: url, Ref: rukpakv1alpha1.GitRef{Branch: "main"},
				}},
				Config: &rukpakv1alpha1.BundleConfig{Path: "overlays/e2e"},
			},
		}
		Expect(c.Create(ctx, bd)).To(Succeed())
		DeferCleanup(func(ctx SpecContext) { _ = c.Delete(ctx, bd) })

		By("building overlays/e2e and reporting Installed and Healthy")
		got := waitCondition(ctx, c, bundleDeploymentNamed(name), rukpakv1alpha1.TypeHealthy, "True", 2*time.Minute, anyGeneration())
		Expect(got.Status.InstalledRevision).To(Equal(int64(1)))
		Expect(got.Status.ResolvedSource).NotTo(BeNil())
		Expect(got.Status.ResolvedSource.Git).NotTo(BeNil())
		Expect(got.Status.ResolvedSource.Git.Commit).To(Equal(commit.String()))
		dep := &appsv1.Deployment{}
		Expect(c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "e2e-greeter"}, dep)).To(Succeed())
		Expect(*dep.Spec.Replicas).To(Equal(int32(2)), "the overlay's patch")
		Expect(dep.Spec.Selector.MatchLabels).To(HaveKeyWithValue("app.kubernetes.io/name", "greeter"))
		cms := &corev1.ConfigMapList{}
		Expect(c.List(ctx, cms, client.InNamespace(ns))).To(Succeed())
		var generated *corev1.ConfigMap
		for i := range cms.Items {
			if strings.HasPrefix(cms.Items[i].Name, "e2e-greeter-") {
				generated = &cms.Items[i]
			}
		}
		Expect(generated).NotTo(BeNil(), "the generated ConfigMap (hashed name)")
		Expect(generated.Data).To(HaveKeyWithValue("greeting", "hello from git"))
		Expect(dep.Spec.Template.Spec.Containers[0].EnvFrom[0].ConfigMapRef.Name).To(Equal(generated.Name))

		By("uninstalling everything when the BundleDeployment is deleted")
		Expect(c.Delete(ctx, bd)).To(Succeed())
		bdExpectNothingLeft(ctx, c, name, ns)
	})

	It("reports a kustomization with a remote base without fetching it", func(ctx SpecContext) {
		const name = "e2e-kustomize-remote"
		ns := createNamespace(ctx, "e2e-kustomize-")
		repo := sourcetest.NewRepo(GinkgoTB())
		repo.WriteFile("kustomization.yaml", "resources:\n- https://github.com/kubernetes-sigs/kustomize//examples/helloWorld?ref=v1.0.6\n")
		repo.Commit("remote base")
		server := sourcetest.NewGitServer(GinkgoTB())
		bd := &rukpakv1alpha1.BundleDeployment{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: rukpakv1alpha1.BundleDeploymentSpec{
				ProvisionerClassName: rukpakv1alpha1.ProvisionerKustomize,
				InstallNamespace:     ns,
				Source: rukpakv1alpha1.Source{Type: rukpakv1alpha1.SourceTypeGit, Git: &rukpakv1alpha1.GitSource{
					Repository: server.Add("remote", repo), Ref: rukpakv1alpha1.GitRef{Branch: "main"},
				}},
			},
		}
		Expect(c.Create(ctx, bd)).To(Succeed())
		DeferCleanup(func(ctx SpecContext) { _ = c.Delete(ctx, bd) })
		got := waitCondition(ctx, c, bundleDeploymentNamed(name), rukpakv1alpha1.TypeUnpacked, "False", time.Minute, anyGeneration())
		cond := meta.FindStatusCondition(got.Status.Conditions, rukpakv1alpha1.TypeUnpacked)
		Expect(cond.Reason).To(Equal("RemoteReference"))
		Expect(cond.Message).To(ContainSubstring("without network access"))
		Expect(got.Status.InstalledRevision).To(BeZero())
		Expect(c.Delete(ctx, bd)).To(Succeed())
		bdExpectNothingLeft(ctx, c, name, ns)
	})
})
