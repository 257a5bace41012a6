package suite

import (
	"encoding/json"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// The plan before the change: `kubectl olmv1 install --dry-run` and `kubectl olmv1 upgrade --preview`
// against the suite's cluster, with the composite fixture (e2e/testdata/composite-operator).
var _ = Describe("kubectl-olmv1 previews", Label("preview"), func() {
	var (
		dc dynamic.Interface
		c  client.Client
	)

	BeforeEach(func() {
		var err error
		dc, err = dynamic.NewForConfig(env.cfg)
		Expect(err).NotTo(HaveOccurred())
		c = newClient(env.cfg)
	})

	It("install --dry-run prints the bundles, objects and RBAC and creates nothing; upgrade --preview prints the version change and diffs and changes nothing", func(ctx SpecContext) {
		const catalogName, opName = "preview-catalog", "preview-hub"
		ops, bds := dc.Resource(operatorGVR), dc.Resource(bundleDeploymentGVRForCLI)

		By("pushing the composite fixture's bundles and serving a catalog of them")
		catalogRef := env.registry.Addr + "/catalogs/preview-index:v1"
		pushCompositeOperator(ctx, "preview", catalogRef)
		DeferCleanup(func(ctx SpecContext) { _ = dc.Resource(catalogGVR).Delete(ctx, catalogName, metav1.DeleteOptions{}) })
		mustKubectlOLMv1(ctx, "catalog", "add", catalogName, catalogRef, "--wait", "--timeout", "2m")

		By("removing the composite CRDs another spec's uninstall kept (CRDs are kept by default): this spec plans their creation")
		for _, crd := range []string{"hubs.composite.olmv1.io", "alphas.composite.olmv1.io", "betas.composite.olmv1.io"} {
			if err := dc.Resource(crdGVR).Delete(ctx, crd, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
				Expect(err).NotTo(HaveOccurred())
			}
			Eventually(func() error { _, err := dc.Resource(crdGVR).Get(ctx, crd, metav1.GetOptions{}); return err }).
				WithContext(ctx).WithTimeout(time.Minute).WithPolling(250*time.Millisecond).Should(Satisfy(apierrors.IsNotFound), "CRD %s", crd)
		}

		By("install --dry-run with dependencyPolicy Install lists the three bundles, their objects and RBAC")
		namespaces := []string{"hub-operator", "alpha-operator", "beta-operator"}
		existed := map[string]bool{}
		for _, ns := range namespaces {
			_, err := env.clientset.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
			existed[ns] = err == nil
		}
		out := mustKubectlOLMv1(ctx, "install", "hub-operator", "--name", opName, "--version", "1.0.0", "--dependency-policy", "Install", "--dry-run")
		Expect(out).To(ContainSubstring("Install package hub-operator as Operator " + opName + ": version 1.0.0"))
		Expect(out).To(ContainSubstring("(dry run: nothing was changed in the cluster)"))
		Expect(out).To(MatchRegexp(`(?m)^` + opName + `\s+hub-operator\.v1\.0\.0\s+1\.0\.0\s+install\s+` + catalogName + `\s+kubectl olmv1$`))
		for _, dep := range []string{"alpha-operator", "beta-operator"} {
			Expect(out).To(MatchRegexp(`(?m)^` + dep + `\s+` + dep + `\.v1\.0\.0\s+1\.0\.0\s+install\s+` + catalogName + `\s+operator-controller$`))
			Expect(out).To(MatchRegexp(`(?m)^create\s+Operator\s+-\s+` + dep + `\s`))
		}
		Expect(out).To(ContainSubstring("requirement: hub-operator.v1.0.0 (Operator " + opName + ") requires olm.gvk.required composite.olmv1.io/v1 Alpha"))
		Expect(out).To(MatchRegexp(`(?m)^create\s+Operator\s+-\s+` + opName + `\s+` + opName + `\s+kubectl olmv1`))
		Expect(out).To(MatchRegexp(`(?m)^create\s+BundleDeployment\s+-\s+` + opName + `\s`))
		Expect(out).To(MatchRegexp(`(?m)^create\s+CustomResourceDefinition\s+-\s+hubs\.composite\.olmv1\.io\s`))
		Expect(out).To(MatchRegexp(`(?m)^create\s+Deployment\s+hub-operator\s+hub-operator\s`))
		Expect(out).To(ContainSubstring("\nRBAC\n"))
		Expect(out).To(ContainSubstring("to ServiceAccount hub-operator/hub-operator [Operator " + opName + "]\n    get,list,watch,update hubs.composite.olmv1.io"))
		Expect(out).To(ContainSubstring("hubs.composite.olmv1.io: new, nothing installed to break"))

		var plan struct {
			Bundles []struct{ Operator, Bundle string }
		}
		Expect(json.Unmarshal([]byte(mustKubectlOLMv1(ctx, "install", "hub-operator", "--name", opName, "--version", "1.0.0",
			"--dependency-policy", "Install", "--dry-run", "-o", "json")), &plan)).To(Succeed())
		Expect(plan.Bundles).To(ConsistOf(
			HaveField("Bundle", "hub-operator.v1.0.0"), HaveField("Bundle", "alpha-operator.v1.0.0"), HaveField("Bundle", "beta-operator.v1.0.0")))

		By("the dry runs created no Operator, BundleDeployment or Namespace")
		for _, name := range []string{opName, "alpha-operator", "beta-operator"} {
			_, err := ops.Get(ctx, name, metav1.GetOptions{})
			Expect(apierrors.IsNotFound(err)).To(BeTrue(), "Operator %s: %v", name, err)
			_, err = bds.Get(ctx, name, metav1.GetOptions{})
			Expect(apierrors.IsNotFound(err)).To(BeTrue(), "BundleDeployment %s: %v", name, err)
		}
		for _, ns := range namespaces {
			if !existed[ns] {
				_, err := env.clientset.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
				Expect(apierrors.IsNotFound(err)).To(BeTrue(), "namespace %s: %v", ns, err)
			}
		}
		_, err := dc.Resource(crdGVR).Get(ctx, "hubs.composite.olmv1.io", metav1.GetOptions{})
		Expect(apierrors.IsNotFound(err)).To(BeTrue(), "CRD hubs.composite.olmv1.io: %v", err)

		By("installing it for real: the Operator and its two dependencies reach Installed")
		_, err = ops.Create(ctx, &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "operators.operatorframework.io/v1alpha1", "kind": "Operator",
			"metadata": map[string]any{"name": opName},
			"spec":     map[string]any{"packageName": "hub-operator", "version": "1.0.0", "dependencyPolicy": "Install"},
		}}, metav1.CreateOptions{})
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(func(ctx SpecContext) {
			_ = ops.Delete(ctx, opName, metav1.DeleteOptions{})
			for _, name := range []string{opName, "alpha-operator", "beta-operator"} {
				Eventually(func() bool {
					_, err := bds.Get(ctx, name, metav1.GetOptions{})
					return apierrors.IsNotFound(err)
				}).WithContext(ctx).WithTimeout(2*time.Minute).Should(BeTrue(), "BundleDeployment %s is removed", name)
			}
		})
		for _, name := range []string{opName, "alpha-operator", "beta-operator"} {
			op := operatorNamed(name)
			waitCondition(ctx, c, op, "Installed", "True", 3*time.Minute, andAlso(func(g Gomega) {
				g.Expect(nestedString(op.Object, "status", "installedBundle", "version")).To(Equal("1.0.0"))
			}))
		}

		By("upgrade --preview to 1.1.0 prints the version change, the diffs and the dependency that goes")
		before, err := ops.Get(ctx, opName, metav1.GetOptions{})
		Expect(err).NotTo(HaveOccurred())
		bdBefore, err := bds.Get(ctx, opName, metav1.GetOptions{})
		Expect(err).NotTo(HaveOccurred())
		betaBefore, err := ops.Get(ctx, "beta-operator", metav1.GetOptions{})
		Expect(err).NotTo(HaveOccurred())
		deploymentBefore, err := env.clientset.AppsV1().Deployments("hub-operator").Get(ctx, "hub-operator", metav1.GetOptions{})
		Expect(err).NotTo(HaveOccurred())

		out = mustKubectlOLMv1(ctx, "upgrade", opName, "--version", "1.1.0", "--preview")
		Expect(out).To(ContainSubstring("Upgrade Operator " + opName + " (package hub-operator): 1.0.0 -> 1.1.0"))
		Expect(out).To(ContainSubstring("(preview: nothing was changed in the cluster)"))
		Expect(out).To(ContainSubstring("upgrade: from hub-operator.v1.0.0 (1.0.0): the catalog's upgrade edge replaces hub-operator.v1.0.0 in channel stable"))
		Expect(out).To(MatchRegexp(`(?m)^update\s+Operator\s+-\s+` + opName + `\s`))
		Expect(out).To(MatchRegexp(`(?m)^update\s+BundleDeployment\s+-\s+` + opName + `\s`))
		Expect(out).To(MatchRegexp(`(?m)^update\s+Deployment\s+hub-operator\s+hub-operator\s`))
		Expect(out).To(MatchRegexp(`(?m)^unchanged\s+ServiceAccount\s+hub-operator\s+hub-operator\s`), "a server-side apply dry run of an unchanged object shows no difference")
		Expect(out).To(MatchRegexp(`(?m)^delete\s+Operator\s+-\s+beta-operator\s`))
		Expect(out).To(ContainSubstring("-  version: 1.0.0\n+  version: 1.1.0\n"))
		Expect(out).To(ContainSubstring("-      ref: " + env.registry.Addr + "/preview/hub-operator:1.0.0\n+      ref: " + env.registry.Addr + "/preview/hub-operator:1.1.0\n"))
		Expect(out).To(ContainSubstring("-        image: registry.example.test/hub-operator:v1.0.0\n"))
		Expect(out).To(ContainSubstring("+        image: registry.example.test/hub-operator:v1.1.0\n"))
		Expect(out).To(ContainSubstring("hubs.composite.olmv1.io: safe"))

		By("the preview changed nothing: the Operator's generation, the BundleDeployment's spec, the dependency's spec and the Deployment are as they were")
		// The controllers may still write status (a condition's time, a health
		// probe), so specs and generations are compared, not resourceVersions.
		after, err := ops.Get(ctx, opName, metav1.GetOptions{})
		Expect(err).NotTo(HaveOccurred())
		Expect(after.GetGeneration()).To(Equal(before.GetGeneration()))
		Expect(nestedString(after.Object, "spec", "version")).To(Equal("1.0.0"))
		bdAfter, err := bds.Get(ctx, opName, metav1.GetOptions{})
		Expect(err).NotTo(HaveOccurred())
		Expect(bdAfter.GetGeneration()).To(Equal(bdBefore.GetGeneration()))
		Expect(bdAfter.Object["spec"]).To(Equal(bdBefore.Object["spec"]))
		betaAfter, err := ops.Get(ctx, "beta-operator", metav1.GetOptions{})
		Expect(err).NotTo(HaveOccurred())
		Expect(betaAfter.GetDeletionTimestamp()).To(BeNil(), "the dependency the preview would delete still exists")
		Expect(betaAfter.GetGeneration()).To(Equal(betaBefore.GetGeneration()))
		Expect(betaAfter.Object["spec"]).To(Equal(betaBefore.Object["spec"]))
		deploymentAfter, err := env.clientset.AppsV1().Deployments("hub-operator").Get(ctx, "hub-operator", metav1.GetOptions{})
		Expect(err).NotTo(HaveOccurred())
		Expect(deploymentAfter.Generation).To(Equal(deploymentBefore.Generation))
		Expect(deploymentAfter.Spec.Template.Spec.Containers[0].Image).To(Equal("registry.example.test/hub-operator:v1.0.0"))
	})
})
