package suite

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"

	"github.com/olmv1/olmv1/e2e/chart"
	"github.com/olmv1/olmv1/e2e/chart/images"
	"github.com/olmv1/olmv1/e2e/localcluster"
)

const (
	release   = "olmv1"
	namespace = "olmv1-system"
)

// The chart spec is the product as users run it: `helm install` of deploy/charts/olmv1 with the images
// `make images` builds, pulled by a real kubelet from the registry, running as real pods.
var _ = Describe("the Helm chart on a real node", Label("real-node"), Ordered, func() {
	var (
		hc *chart.Client
		dc dynamic.Interface
	)

	BeforeAll(func(ctx SpecContext) {
		var err error
		dc, err = dynamic.NewForConfig(env.cfg)
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(func() {
			// The last spec uninstalls; after a failure before it, uninstall here.
			if hc == nil {
				return
			}
			if err := hc.Uninstall(release, 2*time.Minute); err != nil && !strings.Contains(err.Error(), "not found") {
				Fail(err.Error())
			}
		})
	})

	It("installs catalogd, rukpak and operator-controller as real pods, Ready by their own probes", func(ctx SpecContext) {
		start := time.Now()
		hc, _ = installChart(ctx)
		fmt.Fprintf(GinkgoWriter, "chart installed and its three pods Ready in %s\n", time.Since(start).Round(100*time.Millisecond))
	})

	It("serves the CatalogMetadata API through kube-apiserver and a real Service", func(ctx SpecContext) {
		Eventually(func(g Gomega) {
			as, err := dc.Resource(apiServiceGVR).Get(ctx, "v1alpha1.metadata.catalogd.operatorframework.io", metav1.GetOptions{})
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(condition(as, "Available")).To(HaveKeyWithValue("status", "True"), "APIService conditions %v", as.Object["status"])
		}).WithContext(ctx).WithTimeout(2 * time.Minute).Should(Succeed())
		_, err := dc.Resource(catalogMetadataGVR).List(ctx, metav1.ListOptions{Limit: 1})
		Expect(err).NotTo(HaveOccurred())
	})

	It("gives the pods a cluster DNS that resolves Service names", func(ctx SpecContext) {
		By("asking the kube-dns Service from inside the cluster's network namespace")
		r := &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, network, _ string) (net.Conn, error) {
			return env.netns.Dial(ctx, network, net.JoinHostPort(localcluster.ClusterDNSIP, "53"))
		}}
		addrs, err := r.LookupHost(ctx, "kubernetes.default.svc.cluster.local")
		Expect(err).NotTo(HaveOccurred())
		Expect(addrs).To(ConsistOf("10.96.0.1"))
		svc, err := env.clientset.CoreV1().Services(namespace).Get(ctx, "catalogd", metav1.GetOptions{})
		Expect(err).NotTo(HaveOccurred())
		addrs, err = r.LookupHost(ctx, "catalogd."+namespace+".svc.cluster.local")
		Expect(err).NotTo(HaveOccurred())
		Expect(addrs).To(ConsistOf(svc.Spec.ClusterIP))

		By("reading the resolv.conf that kubelet gave catalogd's container")
		pids := processesNamed(env.containerProcesses(), "catalogd")
		Expect(pids).NotTo(BeEmpty())
		conf, err := os.ReadFile(fmt.Sprintf("/proc/%d/root/etc/resolv.conf", pids[0]))
		Expect(err).NotTo(HaveOccurred())
		Expect(string(conf)).To(ContainSubstring("nameserver " + localcluster.ClusterDNSIP))
		Expect(string(conf)).To(ContainSubstring("search " + namespace + ".svc.cluster.local svc.cluster.local cluster.local"))
	})

	It("runs demo 1: a Catalog served, an Operator installed, upgraded by a catalog update, then removed", func(ctx SpecContext) {
		catalogs, _, err := localcluster.PushExampleOperatorTo(ctx, env.repoRoot, env.registry.Addr, env.registry.ClusterAddr, "index")
		Expect(err).NotTo(HaveOccurred())
		runDemo1(ctx, dc, catalogs)
	})

	It("gets a controller killed with SIGKILL restarted by kubelet, and nothing is lost", func(ctx SpecContext) {
		before := onePodNow(ctx, "catalogd")
		restarts := before.Status.ContainerStatuses[0].RestartCount
		pids := processesNamed(env.containerProcesses(), "catalogd")
		Expect(pids).To(HaveLen(1), "one catalogd process on the node")
		By(fmt.Sprintf("killing catalogd (pid %d on this machine) with SIGKILL", pids[0]))
		Expect(syscall.Kill(pids[0], syscall.SIGKILL)).To(Succeed())
		Eventually(func(g Gomega) {
			pod := onePod(g, ctx, "catalogd")
			g.Expect(pod.UID).To(Equal(before.UID), "the same pod: kubelet restarts the container")
			g.Expect(pod.Status.ContainerStatuses[0].RestartCount).To(BeNumerically(">", restarts))
			g.Expect(podReady(pod)).To(BeTrue(), podSummary(pod))
		}).WithContext(ctx).WithTimeout(2 * time.Minute).Should(Succeed())
		pod := onePodNow(ctx, "catalogd")
		Expect(pod.Status.ContainerStatuses[0].LastTerminationState.Terminated).NotTo(BeNil())
		Expect(pod.Status.ContainerStatuses[0].LastTerminationState.Terminated.ExitCode).To(Equal(int32(137)))

		By("a Catalog created before the kill is served again by the restarted catalogd")
		catalogs, _, err := localcluster.PushExampleOperatorTo(ctx, env.repoRoot, env.registry.Addr, env.registry.ClusterAddr, "index")
		Expect(err).NotTo(HaveOccurred())
		createCatalog(ctx, dc, "after-kill", catalogs["0.2.0"])
		waitCondition(ctx, dc.Resource(catalogGVR), "after-kill", "Serving", "True", 2*time.Minute)
		Expect(dc.Resource(catalogGVR).Delete(ctx, "after-kill", metav1.DeleteOptions{})).To(Succeed())
		Eventually(func() bool {
			_, err := dc.Resource(catalogGVR).Get(ctx, "after-kill", metav1.GetOptions{})
			return apierrors.IsNotFound(err)
		}).WithContext(ctx).WithTimeout(time.Minute).Should(BeTrue())
	})

	It("leaves nothing behind on helm uninstall but the CRDs", func(ctx SpecContext) {
		Expect(hc.Uninstall(release, 2*time.Minute)).To(Succeed())
		selector := metav1.ListOptions{LabelSelector: "app.kubernetes.io/instance=" + release}
		Eventually(func(g Gomega) {
			_, err := env.clientset.CoreV1().Namespaces().Get(ctx, namespace, metav1.GetOptions{})
			g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "namespace %s still there: %v", namespace, err)
		}).WithContext(ctx).WithTimeout(2 * time.Minute).Should(Succeed())
		crs, err := env.clientset.RbacV1().ClusterRoles().List(ctx, selector)
		Expect(err).NotTo(HaveOccurred())
		Expect(crs.Items).To(BeEmpty())
		crbs, err := env.clientset.RbacV1().ClusterRoleBindings().List(ctx, selector)
		Expect(err).NotTo(HaveOccurred())
		Expect(crbs.Items).To(BeEmpty())
		as, err := dc.Resource(apiServiceGVR).List(ctx, selector)
		Expect(err).NotTo(HaveOccurred())
		Expect(as.Items).To(BeEmpty())
		Eventually(func() ([]int, error) {
			return processesNamed(env.containerProcesses(), images.Names...), nil
		}).WithContext(ctx).WithTimeout(time.Minute).Should(BeEmpty(), "no controller process left on the node")
	})
})

// runDemo1 is the README's demo 1, step by step, against the chart's pods.
func runDemo1(ctx SpecContext, dc dynamic.Interface, catalogs map[string]string) {
	By("1. a Catalog on index:0.1.0: unpacked and served")
	createCatalog(ctx, dc, "example", catalogs["0.1.0"])
	waitCondition(ctx, dc.Resource(catalogGVR), "example", "Serving", "True", 2*time.Minute)
	metas, err := dc.Resource(catalogMetadataGVR).List(ctx, metav1.ListOptions{LabelSelector: "catalog=example"})
	Expect(err).NotTo(HaveOccurred())
	Expect(metas.Items).NotTo(BeEmpty())

	By("2. an Operator: resolved from the catalog, installed through a BundleDeployment")
	op := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "operators.operatorframework.io/v1alpha1", "kind": "Operator",
		"metadata": map[string]any{"name": "example-operator"},
		// upgradeScope AnyVersion: step 3's 0.1.0 → 0.2.0 crosses a 0.x minor, which the semver
		// guard rails hold back by default.
		"spec": map[string]any{"packageName": "example-operator", "upgradeScope": "AnyVersion"},
	}}
	_, err = dc.Resource(operatorGVR).Create(ctx, op, metav1.CreateOptions{})
	Expect(err).NotTo(HaveOccurred())
	waitCondition(ctx, dc.Resource(operatorGVR), "example-operator", "Installed", "True", 2*time.Minute)
	Expect(installedVersion(ctx, dc)).To(Equal("0.1.0"))

	By("its Deployment's pod really runs on the node: the example image does not exist, so kubelet reports the pull failure")
	Eventually(func(g Gomega) {
		pods, err := env.clientset.CoreV1().Pods("example-operator-system").List(ctx, metav1.ListOptions{})
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(pods.Items).NotTo(BeEmpty())
		w := pods.Items[0].Status.ContainerStatuses
		g.Expect(w).NotTo(BeEmpty())
		g.Expect(w[0].State.Waiting).NotTo(BeNil())
		g.Expect(w[0].State.Waiting.Reason).To(BeElementOf("ErrImagePull", "ImagePullBackOff"))
	}).WithContext(ctx).WithTimeout(2 * time.Minute).Should(Succeed())

	By("3. the catalog moves to index:0.2.0: the same BundleDeployment now installs bundle 0.2.0")
	patch := fmt.Sprintf(`{"spec":{"source":{"image":{"ref":%q}}}}`, catalogs["0.2.0"])
	_, err = dc.Resource(catalogGVR).Patch(ctx, "example", types.MergePatchType, []byte(patch), metav1.PatchOptions{})
	Expect(err).NotTo(HaveOccurred())
	Eventually(func() string { return installedVersion(ctx, dc) }).WithContext(ctx).WithTimeout(2 * time.Minute).Should(Equal("0.2.0"))

	By("4. delete both: no CatalogMetadata, no BundleDeployment, no operator namespace remain")
	Expect(dc.Resource(operatorGVR).Delete(ctx, "example-operator", metav1.DeleteOptions{})).To(Succeed())
	Expect(dc.Resource(catalogGVR).Delete(ctx, "example", metav1.DeleteOptions{})).To(Succeed())
	Eventually(func(g Gomega) {
		bds, err := dc.Resource(bundleDeploymentGVR).List(ctx, metav1.ListOptions{})
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(bds.Items).To(BeEmpty())
		_, err = env.clientset.CoreV1().Namespaces().Get(ctx, "example-operator-system", metav1.GetOptions{})
		g.Expect(apierrors.IsNotFound(err)).To(BeTrue())
	}).WithContext(ctx).WithTimeout(3 * time.Minute).Should(Succeed())
}

func installedVersion(ctx SpecContext, dc dynamic.Interface) string {
	op, err := dc.Resource(operatorGVR).Get(ctx, "example-operator", metav1.GetOptions{})
	if err != nil {
		return ""
	}
	v, _, _ := unstructured.NestedString(op.Object, "status", "installedBundle", "version")
	return v
}

func createCatalog(ctx SpecContext, dc dynamic.Interface, name, ref string) {
	cat := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "catalogd.operatorframework.io/v1alpha1", "kind": "Catalog",
		"metadata": map[string]any{"name": name},
		"spec":     map[string]any{"source": map[string]any{"type": "Image", "image": map[string]any{"ref": ref}}},
	}}
	_, err := dc.Resource(catalogGVR).Create(ctx, cat, metav1.CreateOptions{})
	Expect(err).NotTo(HaveOccurred())
}

// processesNamed keeps the PIDs whose executable is one of names.
func processesNamed(pids []int, names ...string) []int {
	var out []int
	for _, pid := range pids {
		exe, err := os.Readlink(fmt.Sprintf("/proc/%d/exe", pid))
		if err != nil {
			continue
		}
		for _, n := range names {
			if filepath.Base(strings.TrimSuffix(exe, " (deleted)")) == n {
				out = append(out, pid)
			}
		}
	}
	return out
}

func onePod(g Gomega, ctx context.Context, name string) *corev1.Pod {
	pods, err := env.clientset.CoreV1().Pods(namespace).List(ctx, metav1.ListOptions{LabelSelector: "app.kubernetes.io/name=" + name})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(pods.Items).To(HaveLen(1))
	g.Expect(pods.Items[0].Status.ContainerStatuses).NotTo(BeEmpty())
	return &pods.Items[0]
}

func onePodNow(ctx context.Context, name string) *corev1.Pod {
	return onePod(Default, ctx, name)
}
