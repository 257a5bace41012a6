package suite

import (
	"fmt"
	"path/filepath"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"

	"github.com/olmv1/olmv1/e2e/chart"
	"github.com/olmv1/olmv1/e2e/chart/images"
	"github.com/olmv1/olmv1/e2e/realnode/widgetbundle"
)

// OLM v1 upgraded under installed operators (issue 34 item 4): the chart and images of an earlier
// commit (OLM_UPGRADE_PREV_COMMIT, built by `make olm-upgrade-prev`) install three operators whose
// pods really run, then OLM is upgraded the documented way (docs/deploy.md, "Upgrading OLM v1"): the
// current chart's CRDs applied server-side, then `helm upgrade` to the current chart and images.
var _ = Describe("OLM v1 upgraded from an earlier build under installed operators", Label("real-node", "olm-upgrade"), Ordered, func() {
	var (
		dc      dynamic.Interface
		hc      *chart.Client
		prev    string
		fix     *upgradeFixture
		ops     = upgradeOperators()
		before  map[string]workload
		objects map[string]*unstructured.Unstructured
		stored  map[string][]string
	)

	BeforeAll(func(ctx SpecContext) {
		prev = previousBuild()
		var err error
		dc, err = dynamic.NewForConfig(env.cfg)
		Expect(err).NotTo(HaveOccurred())
		waitNamespaceGone(ctx, namespace)
		By("removing the current chart's CRDs, so that the earlier chart installs its own")
		deleteOLMCRDs(ctx, dc)
		// Whatever happens, the specs after this one find the current CRDs (Helm skips existing ones).
		DeferCleanup(func(ctx SpecContext) { applyChartCRDs(ctx, dc, chart.Dir(env.repoRoot)) })
		DeferCleanup(func(ctx SpecContext) {
			if hc != nil {
				Expect(hc.Uninstall(release, 2*time.Minute)).To(Succeed())
			}
		})
		DeferCleanup(func(ctx SpecContext) {
			for _, op := range ops {
				_ = dc.Resource(operatorGVR).Delete(ctx, op.pkg, metav1.DeleteOptions{})
			}
			Eventually(func(g Gomega) {
				bds, err := dc.Resource(bundleDeploymentGVR).List(ctx, metav1.ListOptions{})
				g.Expect(err).NotTo(HaveOccurred())
				g.Expect(bds.Items).To(BeEmpty())
			}).WithContext(ctx).WithTimeout(2 * time.Minute).Should(Succeed())
			_ = dc.Resource(catalogGVR).Delete(ctx, upgradeCatalog, metav1.DeleteOptions{})
			Eventually(func() bool {
				_, err := dc.Resource(catalogGVR).Get(ctx, upgradeCatalog, metav1.GetOptions{})
				return apierrors.IsNotFound(err)
			}).WithContext(ctx).WithTimeout(time.Minute).Should(BeTrue())
			deleteWidgetCRD(ctx, dc)
		})
	})

	It("installs the earlier build's chart and images as real pods", func(ctx SpecContext) {
		start := time.Now()
		digests, err := pushPreviousImages(ctx, filepath.Join(prev, "images"), "olmv1-prev")
		Expect(err).NotTo(HaveOccurred())
		vals := map[string]any{
			"image": map[string]any{"registry": env.registry.ClusterAddr + "/olmv1-prev"},
			"tls":   map[string]any{"mode": "selfSigned"},
		}
		for key, n := range map[string]string{"catalogd": "catalogd", "rukpak": "rukpak", "operatorController": "operator-controller"} {
			vals[key] = map[string]any{"image": map[string]any{"repository": n, "digest": digests[n]}}
		}
		ch, err := chart.Load(filepath.Join(prev, "chart"))
		Expect(err).NotTo(HaveOccurred())
		hc, err = chart.NewClient(env.kubeconfig, "default", nil)
		Expect(err).NotTo(HaveOccurred())
		_, err = hc.Install(ctx, ch, release, vals, 3*time.Minute)
		Expect(err).NotTo(HaveOccurred())
		waitChartPods(ctx, digests)
		fmt.Fprintf(GinkgoWriter, "earlier build installed and its three pods Ready in %s\n", time.Since(start).Round(100*time.Millisecond))
		_, err = dc.Resource(crdGVR).Get(ctx, "operatorconditions.operators.coreos.com", metav1.GetOptions{})
		Expect(apierrors.IsNotFound(err)).To(BeTrue(), "the earlier build has no OperatorCondition CRD: the upgrade adds it")
	})

	It("installs three Operators from a Catalog with the earlier build: Installed, Healthy, their pods running", func(ctx SpecContext) {
		start := time.Now()
		var err error
		fix, err = buildUpgradeCatalogs(ctx)
		Expect(err).NotTo(HaveOccurred())
		createCatalog(ctx, dc, upgradeCatalog, fix.catalogs["v1"])
		waitCondition(ctx, dc.Resource(catalogGVR), upgradeCatalog, "Serving", "True", 2*time.Minute)
		for _, op := range ops {
			obj := &unstructured.Unstructured{Object: map[string]any{
				"apiVersion": "operators.operatorframework.io/v1alpha1", "kind": "Operator",
				"metadata": map[string]any{"name": op.pkg},
				"spec":     map[string]any{"packageName": op.pkg},
			}}
			_, err := dc.Resource(operatorGVR).Create(ctx, obj, metav1.CreateOptions{})
			Expect(err).NotTo(HaveOccurred())
		}
		Eventually(func(g Gomega) {
			expectInstalledAndHealthy(ctx, g, dc, ops)
			for _, w := range workloads(ctx, g, ops) {
				g.Expect(w.Pods).To(HaveLen(1))
			}
		}).WithContext(ctx).WithTimeout(3 * time.Minute).Should(Succeed())
		fmt.Fprintf(GinkgoWriter, "three Operators Installed and Healthy %s after the catalog was pushed\n", time.Since(start).Round(100*time.Millisecond))
	})

	It("upgrades OLM: the current CRDs applied server-side keep every stored version and field, then helm upgrade to the current chart and images", func(ctx SpecContext) {
		before = workloads(ctx, Default, ops)
		objects = olmObjects(ctx, dc)
		Expect(objects).To(HaveLen(7), "a Catalog, three Operators and their BundleDeployments")
		stored = storedVersions(ctx, dc)
		watch := watchConditions(dc, ops)
		start := time.Now()

		By("1. the current chart's CRDs, server-side")
		applyChartCRDs(ctx, dc, chart.Dir(env.repoRoot))
		after := storedVersions(ctx, dc)
		for crd, versions := range stored {
			Expect(after[crd]).To(ContainElements(versions), "CRD %s keeps the versions objects are stored in", crd)
			served, _, _ := unstructured.NestedSlice(mustGet(ctx, dc, crd).Object, "spec", "versions")
			for _, v := range versions {
				Expect(servedVersion(served, v)).To(BeTrue(), "CRD %s still serves stored version %s", crd, v)
			}
		}
		Expect(after).To(HaveKey("operatorconditions.operators.coreos.com"))
		expectNoLostFields(ctx, dc, objects)

		By("2. helm upgrade to the current chart and images")
		_, digests, err := chart.InstallFromBinaries(ctx, env.kubeconfig, env.repoRoot, chart.FromBinaries{
			BinDir: env.binDir, PushRegistry: env.registry.Addr + "/olmv1", PullRegistry: env.registry.ClusterAddr + "/olmv1",
			Release: release, Values: map[string]any{"tls": map[string]any{"mode": "selfSigned"}},
		}, 3*time.Minute)
		Expect(err).NotTo(HaveOccurred())
		current := map[string]string{}
		for n, d := range digests {
			current[n] = d.DigestStr()
		}
		waitChartPods(ctx, current)
		fmt.Fprintf(GinkgoWriter, "OLM upgraded (CRDs applied, helm upgrade, new pods Ready) in %s\n", time.Since(start).Round(100*time.Millisecond))

		By("the current operator-controller reconciles every Operator: each gets its OperatorCondition")
		Eventually(func(g Gomega) {
			for _, op := range ops {
				list, err := dc.Resource(operatorConditionGVR).Namespace(op.namespace).List(ctx, metav1.ListOptions{})
				g.Expect(err).NotTo(HaveOccurred())
				g.Expect(list.Items).To(HaveLen(1), "OperatorConditions in %s", op.namespace)
			}
		}).WithContext(ctx).WithTimeout(2 * time.Minute).Should(Succeed())

		By("for 15 s with the current controllers running, no installed Deployment or pod changes and every Operator stays Installed and Healthy")
		Consistently(func(g Gomega) {
			g.Expect(workloads(ctx, g, ops)).To(Equal(before))
			expectInstalledAndHealthy(ctx, g, dc, ops)
		}).WithContext(ctx).WithTimeout(15 * time.Second).WithPolling(time.Second).Should(Succeed())
		seen, polls := watch.stop()
		Expect(seen).To(BeEmpty(), "an Operator was not Installed and Healthy during the upgrade (%d polls)", polls)
		fmt.Fprintf(GinkgoWriter, "every Operator Installed and Healthy in each of %d polls during the upgrade\n", polls)
		expectNoLostFields(ctx, dc, objects)
		for _, op := range ops {
			d, err := env.clientset.AppsV1().Deployments(op.namespace).Get(ctx, op.deployment, metav1.GetOptions{})
			Expect(err).NotTo(HaveOccurred())
			Expect(fmt.Sprint(d.Spec.Template.Spec.Containers[0].Env)).NotTo(ContainSubstring("OPERATOR_CONDITION_NAME"),
				"%s: the variable is added with the operator's next upgrade, not by upgrading OLM", op.pkg)
		}
	})

	It("still upgrades an Operator when its catalog is updated after the upgrade", func(ctx SpecContext) {
		widget := ops[0]
		patch := fmt.Sprintf(`{"spec":{"source":{"image":{"ref":%q}}}}`, fix.catalogs["v2"])
		_, err := dc.Resource(catalogGVR).Patch(ctx, upgradeCatalog, types.MergePatchType, []byte(patch), metav1.PatchOptions{})
		Expect(err).NotTo(HaveOccurred())
		start := time.Now()
		Eventually(func(g Gomega) {
			op, err := dc.Resource(operatorGVR).Get(ctx, widget.pkg, metav1.GetOptions{})
			g.Expect(err).NotTo(HaveOccurred())
			v, _, _ := unstructured.NestedString(op.Object, "status", "installedBundle", "version")
			g.Expect(v).To(Equal("1.1.0"))
			expectInstalledAndHealthy(ctx, g, dc, ops)
			pod := widgetPod(g, ctx)
			g.Expect(before[widget.namespace+"/"+widget.deployment].Pods[0]).NotTo(HavePrefix(string(pod.UID)), "a new pod runs 1.1.0")
			g.Expect(podReady(pod)).To(BeTrue(), podSummary(pod))
		}).WithContext(ctx).WithTimeout(3 * time.Minute).Should(Succeed())
		fmt.Fprintf(GinkgoWriter, "widget-operator upgraded to 1.1.0 and Healthy %s after the catalog update\n", time.Since(start).Round(100*time.Millisecond))

		By("the upgraded operator's Deployment now names its OperatorCondition; the other two are untouched")
		d, err := env.clientset.AppsV1().Deployments(widget.namespace).Get(ctx, widget.deployment, metav1.GetOptions{})
		Expect(err).NotTo(HaveOccurred())
		Expect(fmt.Sprint(d.Spec.Template.Spec.Containers[0].Env)).To(ContainSubstring("OPERATOR_CONDITION_NAME " + widgetbundle.CSVName("1.1.0")))
		now := workloads(ctx, Default, ops[1:])
		for _, op := range ops[1:] {
			key := op.namespace + "/" + op.deployment
			Expect(now[key]).To(Equal(before[key]), key)
		}
	})

	It("holds the next upgrade while the operator says Upgradeable=False on its OperatorCondition, and upgrades once it clears it", Label("operator-condition"), func(ctx SpecContext) {
		holdAndReleaseUpgrade(ctx, dc, fix)
	})
})

// waitChartPods waits until the chart's three pods run the images of digests and are Ready.
func waitChartPods(ctx SpecContext, digests map[string]string) {
	for _, n := range images.Names {
		By("waiting for " + n + "'s pod to be Ready with image " + digests[n])
		Eventually(func(g Gomega) {
			pod := onePod(g, ctx, n)
			g.Expect(pod.Status.ContainerStatuses[0].ImageID).To(ContainSubstring(digests[n]), "the image pulled is the one pushed")
			g.Expect(podReady(pod)).To(BeTrue(), "pod %s: %s", pod.Name, podSummary(pod))
		}).WithContext(ctx).WithTimeout(3 * time.Minute).Should(Succeed())
	}
}

// expectNoLostFields checks that every object of before still has what its spec and labels had.
func expectNoLostFields(ctx SpecContext, dc dynamic.Interface, before map[string]*unstructured.Unstructured) {
	now := olmObjects(ctx, dc)
	var lost []string
	for key, obj := range before {
		got, ok := now[key]
		if !ok {
			lost = append(lost, key+": gone")
			continue
		}
		for _, l := range lostFields(obj, got) {
			lost = append(lost, key+": "+l)
		}
	}
	Expect(lost).To(BeEmpty(), "fields of existing objects lost or changed:\n%s", strings.Join(lost, "\n"))
}

func mustGet(ctx SpecContext, dc dynamic.Interface, crd string) *unstructured.Unstructured {
	obj, err := dc.Resource(crdGVR).Get(ctx, crd, metav1.GetOptions{})
	Expect(err).NotTo(HaveOccurred())
	return obj
}

// servedVersion reports whether the CRD versions list serves version v.
func servedVersion(versions []any, v string) bool {
	for _, x := range versions {
		if m, ok := x.(map[string]any); ok && m["name"] == v && m["served"] == true {
			return true
		}
	}
	return false
}
