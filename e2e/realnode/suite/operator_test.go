package suite

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"

	"github.com/olmv1/olmv1/e2e/chart"
	"github.com/olmv1/olmv1/e2e/chart/images"
	"github.com/olmv1/olmv1/e2e/realnode/widgetbundle"
)

var (
	widgetV1 = schema.GroupVersionResource{Group: "widgets.olmv1.io", Version: "v1", Resource: "widgets"}
	widgetV2 = schema.GroupVersionResource{Group: "widgets.olmv1.io", Version: "v2", Resource: "widgets"}
)

const (
	widgetNamespace = "widgets"
	widgetOperator  = "widget-operator"
)

// A real operator of our own (e2e/realnode/widgetoperator), installed from a catalog by an Operator:
// its pod runs on the real node, reconciles its custom resources through the kubernetes Service, and
// kube-apiserver calls its validating, mutating and conversion webhooks through their Service.
var _ = Describe("a real operator with webhooks on a real node", Label("real-node", "widget-operator"), Ordered, func() {
	var (
		dc  dynamic.Interface
		fix *widgetbundle.Fixture
		hc  *chart.Client
	)

	BeforeAll(func(ctx SpecContext) {
		var err error
		dc, err = dynamic.NewForConfig(env.cfg)
		Expect(err).NotTo(HaveOccurred())
		By("installing OLM v1 with the chart")
		hc, _ = installChart(ctx)
		DeferCleanup(func(ctx SpecContext) {
			Expect(hc.Uninstall(release, 2*time.Minute)).To(Succeed())
		})
		DeferCleanup(func(ctx SpecContext) {
			// After a failure: leave no Widget behind a dead conversion webhook (it would block the
			// deletion of every namespace), nor the Operator.
			deleteWidgets(ctx, dc)
			_ = dc.Resource(operatorGVR).Delete(ctx, widgetOperator, metav1.DeleteOptions{})
			Eventually(func() bool {
				bds, err := dc.Resource(bundleDeploymentGVR).List(ctx, metav1.ListOptions{})
				return err == nil && len(bds.Items) == 0
			}).WithContext(ctx).WithTimeout(2 * time.Minute).Should(BeTrue())
			deleteWidgetCRD(ctx, dc)
		})
		By("building widget-operator, its bundles 1.0.0 and 1.1.0 and catalogs v1 and v2, and pushing them")
		fix, err = widgetbundle.Build(ctx, widgetbundle.Options{
			E2ERoot: filepath.Join(env.repoRoot, "e2e"), PushAddr: env.registry.Addr, ClusterAddr: env.registry.ClusterAddr,
		})
		Expect(err).NotTo(HaveOccurred())
		createCatalog(ctx, dc, "widgets", fix.Catalogs["v1"])
		waitCondition(ctx, dc.Resource(catalogGVR), "widgets", "Serving", "True", 2*time.Minute)
		_, err = env.clientset.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: widgetNamespace}}, metav1.CreateOptions{})
		Expect(err).NotTo(HaveOccurred())
	})

	It("installs it with an Operator: Installed and Healthy once its pod runs and its webhooks have a ready endpoint", func(ctx SpecContext) {
		op := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "operators.operatorframework.io/v1alpha1", "kind": "Operator",
			"metadata": map[string]any{"name": widgetOperator},
			"spec":     map[string]any{"packageName": widgetbundle.Package},
		}}
		start := time.Now()
		_, err := dc.Resource(operatorGVR).Create(ctx, op, metav1.CreateOptions{})
		Expect(err).NotTo(HaveOccurred())
		waitCondition(ctx, dc.Resource(operatorGVR), widgetOperator, "Installed", "True", 2*time.Minute)
		waitCondition(ctx, dc.Resource(operatorGVR), widgetOperator, "Healthy", "True", 3*time.Minute)
		fmt.Fprintf(GinkgoWriter, "widget-operator Installed and Healthy %s after the Operator was created\n", time.Since(start).Round(100*time.Millisecond))
		pod := widgetPod(Default, ctx)
		Expect(podReady(pod)).To(BeTrue(), podSummary(pod))
	})

	It("reconciles a custom resource (writes its status) and its mutating webhook defaults it", func(ctx SpecContext) {
		w := widget("v1", "first", map[string]any{"size": int64(3)})
		// Healthy=True means the webhook Service has a ready endpoint; kube-proxy programs the
		// ClusterIP that kube-apiserver dials a moment later (seen on kind: the first call right after
		// Healthy refused). Only that refusal is retried, and for seconds, not minutes.
		start := time.Now()
		Eventually(func(g Gomega) {
			_, err := dc.Resource(widgetV1).Namespace(widgetNamespace).Create(ctx, w, metav1.CreateOptions{})
			if err != nil && !strings.Contains(err.Error(), "connect: connection refused") {
				StopTrying("creating Widget first").Wrap(err).Now()
			}
			g.Expect(err).NotTo(HaveOccurred(), "the webhook's ClusterIP is not routed yet")
		}).WithContext(ctx).WithTimeout(15 * time.Second).Should(Succeed())
		fmt.Fprintf(GinkgoWriter, "first webhook call answered %s after the spec started\n", time.Since(start).Round(10*time.Millisecond))
		Eventually(func(g Gomega) {
			got, err := dc.Resource(widgetV1).Namespace(widgetNamespace).Get(ctx, "first", metav1.GetOptions{})
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(got.GetLabels()).To(HaveKeyWithValue("widgets.olmv1.io/defaulted", "true"), "set by the mutating webhook")
			g.Expect(got.Object["status"]).To(HaveKeyWithValue("phase", "Reconciled"))
			g.Expect(got.Object["status"]).To(HaveKeyWithValue("observedSize", BeNumerically("==", 3)))
			g.Expect(got.Object["status"]).To(HaveKeyWithValue("operatorVersion", "1.0.0"))
		}).WithContext(ctx).WithTimeout(time.Minute).Should(Succeed())

		By("a Widget without a size gets size 1 from the mutating webhook")
		_, err := dc.Resource(widgetV1).Namespace(widgetNamespace).Create(ctx, widget("v1", "defaulted", map[string]any{}), metav1.CreateOptions{})
		Expect(err).NotTo(HaveOccurred())
		got, err := dc.Resource(widgetV1).Namespace(widgetNamespace).Get(ctx, "defaulted", metav1.GetOptions{})
		Expect(err).NotTo(HaveOccurred())
		Expect(nestedInt(got.Object, "spec", "size")).To(Equal(int64(1)))
	})

	It("refuses a bad custom resource through kube-apiserver with the validating webhook's own message", func(ctx SpecContext) {
		_, err := dc.Resource(widgetV1).Namespace(widgetNamespace).Create(ctx, widget("v1", "too-big", map[string]any{"size": int64(42)}), metav1.CreateOptions{})
		Expect(err).To(HaveOccurred())
		Expect(err.Error()).To(ContainSubstring(`admission webhook "vwidget.widgets.olmv1.io" denied the request`))
		Expect(err.Error()).To(ContainSubstring("widget-operator: spec.size must be between 0 and 10, got 42"))
	})

	It("reads an object stored as v1 back as v2 through the conversion webhook, and v2 writes back as v1", func(ctx SpecContext) {
		got, err := dc.Resource(widgetV2).Namespace(widgetNamespace).Get(ctx, "first", metav1.GetOptions{})
		Expect(err).NotTo(HaveOccurred())
		Expect(got.GetAPIVersion()).To(Equal("widgets.olmv1.io/v2"))
		Expect(nestedInt(got.Object, "spec", "replicas")).To(Equal(int64(3)))
		_, found, _ := unstructured.NestedFieldNoCopy(got.Object, "spec", "size")
		Expect(found).To(BeFalse(), "v2 has replicas, not size")

		Expect(unstructured.SetNestedField(got.Object, int64(5), "spec", "replicas")).To(Succeed())
		_, err = dc.Resource(widgetV2).Namespace(widgetNamespace).Update(ctx, got, metav1.UpdateOptions{})
		Expect(err).NotTo(HaveOccurred())
		v1obj, err := dc.Resource(widgetV1).Namespace(widgetNamespace).Get(ctx, "first", metav1.GetOptions{})
		Expect(err).NotTo(HaveOccurred())
		Expect(nestedInt(v1obj.Object, "spec", "size")).To(Equal(int64(5)))

		By("the v2 validating rule is the operator's too")
		_, err = dc.Resource(widgetV2).Namespace(widgetNamespace).Create(ctx, widget("v2", "too-many", map[string]any{"replicas": int64(11)}), metav1.CreateOptions{})
		Expect(err).To(MatchError(ContainSubstring("widget-operator: spec.replicas must be between 0 and 10, got 11")))
	})

	It("reports a crash-looping operator as Healthy=False with CrashLoopBackOff and the container's last message, and Healthy again once fixed", func(ctx SpecContext) {
		setOperatorEnv(ctx, dc, []any{map[string]any{"name": "WIDGET_CRASH", "value": "true"}})
		var healthy map[string]any
		Eventually(func(g Gomega) {
			op, err := dc.Resource(operatorGVR).Get(ctx, widgetOperator, metav1.GetOptions{})
			g.Expect(err).NotTo(HaveOccurred())
			healthy = condition(op, "Healthy")
			g.Expect(healthy).To(HaveKeyWithValue("status", "False"))
			g.Expect(healthy["message"]).To(ContainSubstring("CrashLoopBackOff"))
			g.Expect(healthy["message"]).To(ContainSubstring("widget-operator: crashing because WIDGET_CRASH=true (unset it to recover)"))
		}).WithContext(ctx).WithTimeout(3 * time.Minute).Should(Succeed())
		fmt.Fprintf(GinkgoWriter, "Healthy on the Operator: %s: %s\n", healthy["reason"], healthy["message"])

		setOperatorEnv(ctx, dc, nil)
		waitCondition(ctx, dc.Resource(operatorGVR), widgetOperator, "Healthy", "True", 3*time.Minute)
	})

	It("reports the operator's process killed from outside as Healthy=False with the container's exit, and Healthy again once it runs", func(ctx SpecContext) {
		var healthy map[string]any
		kills := 0
		Eventually(func(g Gomega) {
			for _, pid := range processesNamed(env.containerProcesses(), "widget-operator") {
				if syscall.Kill(pid, syscall.SIGKILL) == nil {
					kills++
				}
			}
			op, err := dc.Resource(operatorGVR).Get(ctx, widgetOperator, metav1.GetOptions{})
			g.Expect(err).NotTo(HaveOccurred())
			healthy = condition(op, "Healthy")
			g.Expect(healthy).To(HaveKeyWithValue("status", "False"))
			g.Expect(healthy["message"]).To(ContainSubstring("last exit code 137"))
		}).WithContext(ctx).WithTimeout(3 * time.Minute).WithPolling(time.Second).Should(Succeed())
		fmt.Fprintf(GinkgoWriter, "after %d SIGKILLs, Healthy on the Operator: %s: %s\n", kills, healthy["reason"], healthy["message"])
		waitCondition(ctx, dc.Resource(operatorGVR), widgetOperator, "Healthy", "True", 3*time.Minute)
	})

	It("rotates the webhook certificates while the operator runs, and every webhook call is answered", func(ctx SpecContext) {
		rotateWhileServing(ctx, dc)
	})

	It("upgrades to the next version: a new pod replaces the old one and every custom resource is kept", func(ctx SpecContext) {
		before := widgetPod(Default, ctx)
		patch := fmt.Sprintf(`{"spec":{"source":{"image":{"ref":%q}}}}`, fix.Catalogs["v2"])
		_, err := dc.Resource(catalogGVR).Patch(ctx, "widgets", types.MergePatchType, []byte(patch), metav1.PatchOptions{})
		Expect(err).NotTo(HaveOccurred())
		Eventually(func(g Gomega) {
			op, err := dc.Resource(operatorGVR).Get(ctx, widgetOperator, metav1.GetOptions{})
			g.Expect(err).NotTo(HaveOccurred())
			v, _, _ := unstructured.NestedString(op.Object, "status", "installedBundle", "version")
			g.Expect(v).To(Equal("1.1.0"))
			g.Expect(condition(op, "Healthy")).To(HaveKeyWithValue("status", "True"))
			pod := widgetPod(g, ctx)
			g.Expect(pod.UID).NotTo(Equal(before.UID))
		}).WithContext(ctx).WithTimeout(3 * time.Minute).Should(Succeed())
		Eventually(func(g Gomega) {
			got, err := dc.Resource(widgetV1).Namespace(widgetNamespace).Get(ctx, "first", metav1.GetOptions{})
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(nestedInt(got.Object, "spec", "size")).To(Equal(int64(5)))
			g.Expect(got.Object["status"]).To(HaveKeyWithValue("operatorVersion", "1.1.0"), "reconciled by the new version")
		}).WithContext(ctx).WithTimeout(2 * time.Minute).Should(Succeed())
		list, err := dc.Resource(widgetV1).Namespace(widgetNamespace).List(ctx, metav1.ListOptions{})
		Expect(err).NotTo(HaveOccurred())
		Expect(list.Items).To(HaveLen(2))
	})

	It("removes the operator and its webhooks when the Operator is deleted, and keeps its CRD (users' data)", func(ctx SpecContext) {
		By("deleting the Widgets first, while the conversion webhook still runs: a kept CRD whose conversion webhook is gone cannot list objects written through another version, and that blocks the deletion of every namespace")
		deleteWidgets(ctx, dc)
		Expect(dc.Resource(operatorGVR).Delete(ctx, widgetOperator, metav1.DeleteOptions{})).To(Succeed())
		Eventually(func(g Gomega) {
			_, err := dc.Resource(operatorGVR).Get(ctx, widgetOperator, metav1.GetOptions{})
			g.Expect(apierrors.IsNotFound(err)).To(BeTrue())
			bds, err := dc.Resource(bundleDeploymentGVR).List(ctx, metav1.ListOptions{})
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(bds.Items).To(BeEmpty(), "the BundleDeployment is removed by rukpak before the chart goes")
			pods, err := env.clientset.CoreV1().Pods(widgetbundle.SuggestedNamespace).List(ctx, metav1.ListOptions{})
			if err == nil {
				g.Expect(pods.Items).To(BeEmpty())
			}
		}).WithContext(ctx).WithTimeout(3 * time.Minute).Should(Succeed())
		vwcs, err := env.clientset.AdmissionregistrationV1().ValidatingWebhookConfigurations().List(ctx, metav1.ListOptions{})
		Expect(err).NotTo(HaveOccurred())
		for _, w := range vwcs.Items {
			Expect(w.Name).NotTo(ContainSubstring("widget"), "the operator's validating webhook is gone")
		}
		_, err = env.clientset.Discovery().ServerResourcesForGroupVersion("widgets.olmv1.io/v1")
		Expect(err).NotTo(HaveOccurred(), "rukpak keeps CRDs on uninstall (docs/rukpak.md)")
		deleteWidgetCRD(ctx, dc)
		Expect(dc.Resource(catalogGVR).Delete(ctx, "widgets", metav1.DeleteOptions{})).To(Succeed())
		Eventually(func() bool {
			_, err := dc.Resource(catalogGVR).Get(ctx, "widgets", metav1.GetOptions{})
			return apierrors.IsNotFound(err)
		}).WithContext(ctx).WithTimeout(time.Minute).Should(BeTrue())
	})
})

// deleteWidgets deletes the Widgets' namespace and waits until it is gone.
func deleteWidgets(ctx context.Context, dc dynamic.Interface) {
	err := env.clientset.CoreV1().Namespaces().Delete(ctx, widgetNamespace, metav1.DeleteOptions{})
	if apierrors.IsNotFound(err) {
		return
	}
	Expect(err).NotTo(HaveOccurred())
	Eventually(func() bool {
		_, err := env.clientset.CoreV1().Namespaces().Get(ctx, widgetNamespace, metav1.GetOptions{})
		return apierrors.IsNotFound(err)
	}).WithContext(ctx).WithTimeout(2*time.Minute).Should(BeTrue(), "namespace %s (its Widgets) is still there", widgetNamespace)
}

// deleteWidgetCRD deletes the Widget CRD that rukpak keeps after uninstall, and waits until it is gone.
func deleteWidgetCRD(ctx context.Context, dc dynamic.Interface) {
	crds := dc.Resource(schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"})
	err := crds.Delete(ctx, "widgets.widgets.olmv1.io", metav1.DeleteOptions{})
	if apierrors.IsNotFound(err) {
		return
	}
	Expect(err).NotTo(HaveOccurred())
	Eventually(func() bool {
		_, err := crds.Get(ctx, "widgets.widgets.olmv1.io", metav1.GetOptions{})
		return apierrors.IsNotFound(err)
	}).WithContext(ctx).WithTimeout(2 * time.Minute).Should(BeTrue())
}

// installChart installs the chart from the images of env.binDir, pulled by the node from the registry,
// and waits for its three pods to be Ready; it returns the Helm client and each image's digest.
func installChart(ctx SpecContext) (*chart.Client, map[string]name.Digest) {
	waitNamespaceGone(ctx, namespace)
	hc, digests, err := chart.InstallFromBinaries(ctx, env.kubeconfig, env.repoRoot, chart.FromBinaries{
		BinDir: env.binDir, PushRegistry: env.registry.Addr + "/olmv1", PullRegistry: env.registry.ClusterAddr + "/olmv1",
		Release: release, Values: map[string]any{"tls": map[string]any{"mode": "selfSigned"}},
	}, 3*time.Minute)
	Expect(err).NotTo(HaveOccurred())
	for _, name := range images.Names {
		By("waiting for " + name + "'s pod to be Ready on " + env.nodeName)
		Eventually(func(g Gomega) {
			pod := onePod(g, ctx, name)
			g.Expect(pod.Spec.NodeName).To(Equal(env.nodeName))
			g.Expect(podReady(pod)).To(BeTrue(), "pod %s: %s", pod.Name, podSummary(pod))
			g.Expect(pod.Status.ContainerStatuses[0].ImageID).To(ContainSubstring(digests[name].DigestStr()), "the image pulled is the one pushed")
		}).WithContext(ctx).WithTimeout(3 * time.Minute).Should(Succeed())
	}
	return hc, digests
}

func widget(version, name string, spec map[string]any) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "widgets.olmv1.io/" + version, "kind": "Widget",
		"metadata": map[string]any{"name": name, "namespace": widgetNamespace},
		"spec":     spec,
	}}
}

func widgetPod(g Gomega, ctx context.Context) *corev1.Pod {
	pods, err := env.clientset.CoreV1().Pods(widgetbundle.SuggestedNamespace).List(ctx, metav1.ListOptions{LabelSelector: "app.kubernetes.io/name=widget-operator"})
	g.Expect(err).NotTo(HaveOccurred())
	var live []corev1.Pod
	for _, p := range pods.Items {
		if p.DeletionTimestamp == nil {
			live = append(live, p)
		}
	}
	g.Expect(live).To(HaveLen(1), "widget-operator pods: %v", podNames(pods.Items))
	return &live[0]
}

func podNames(pods []corev1.Pod) string {
	var names []string
	for _, p := range pods {
		names = append(names, p.Name+" ("+podSummary(&p)+")")
	}
	return strings.Join(names, ", ")
}

// setOperatorEnv sets (nil: removes) spec.config.deploymentConfig.env of the widget Operator.
func setOperatorEnv(ctx SpecContext, dc dynamic.Interface, env []any) {
	var patch string
	if env == nil {
		patch = `{"spec":{"config":null}}`
	} else {
		patch = fmt.Sprintf(`{"spec":{"config":{"deploymentConfig":{"env":%s}}}}`, mustJSON(env))
	}
	_, err := dc.Resource(operatorGVR).Patch(ctx, widgetOperator, types.MergePatchType, []byte(patch), metav1.PatchOptions{})
	Expect(err).NotTo(HaveOccurred())
}

// nestedInt is the integer at path in obj, or -1 when there is none.
func nestedInt(obj map[string]any, path ...string) int64 {
	v, found, err := unstructured.NestedInt64(obj, path...)
	if err != nil || !found {
		return -1
	}
	return v
}
