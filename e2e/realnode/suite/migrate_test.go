package suite

import (
	"crypto/x509"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"

	"github.com/olmv1/olmv1/e2e/realnode/widgetbundle"
)

// `kubectl olmv1 migrate` on a real node (issue 33): widget-operator installed exactly as OLM v0
// leaves it (operator-controller/test/tools/v0install: Subscription, OperatorGroup, CatalogSource,
// CSV, Deployment, RBAC, webhook Service, Secret and configurations signed by OLM v0's CA, the
// conversion webhook in the CRD), its pod really running and serving its webhooks, a Widget created
// through them; then the real CLI moves it to an Operator in place: no pod is recreated or restarted,
// no custom resource is lost, and the webhooks go on answering with OLM v1's certificate once kubelet
// has refreshed the Secret volume. OLM v0 itself does not run (it cannot be built here): nothing
// writes its marks back between the steps (docs/migration.md).
var _ = Describe("kubectl olmv1 migrate moves an operator installed by OLM v0 in place, with real pods", Label("real-node", "migrate"), Ordered, func() {
	var (
		dc          dynamic.Interface
		fix         *widgetbundle.Fixture
		work, tool  string
		v0CA        *x509.Certificate
		before      map[string]workload
		deployment  *appsv1.Deployment
		sets        []string
		widgetFirst *unstructured.Unstructured
		// started and migrated are when migrate was run and returned; caller calls the webhooks
		// from just before until the operator serves OLM v1's certificate.
		started, migrated time.Time
		caller            *webhookCaller
	)
	ops := []upgradeOperator{{widgetbundle.Package, migrateNamespace, migrateDeployment}}

	BeforeAll(func(ctx SpecContext) {
		var err error
		dc, err = dynamic.NewForConfig(env.cfg)
		Expect(err).NotTo(HaveOccurred())
		By("installing OLM v1 with the chart")
		hc, _ := installChart(ctx)
		DeferCleanup(func(ctx SpecContext) {
			Expect(hc.Uninstall(release, 2*time.Minute)).To(Succeed())
		})
		DeferCleanup(func(ctx SpecContext) { cleanupMigration(ctx, dc) })

		work, err = os.MkdirTemp("", "olmv1-migrate-")
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(func() { _ = os.RemoveAll(work) })
		By("building widget-operator, its bundles and catalogs, and pushing them; building v0install")
		fix, err = widgetbundle.Build(ctx, widgetbundle.Options{
			E2ERoot: filepath.Join(env.repoRoot, "e2e"), PushAddr: env.registry.Addr, ClusterAddr: env.registry.ClusterAddr, WorkDir: work,
		})
		Expect(err).NotTo(HaveOccurred())
		tool = buildV0Install(ctx, work)
		DeferCleanup(func() {
			if caller != nil {
				caller.stop()
			}
		})
	})

	It("runs widget-operator as OLM v0 installed it: its pod Ready on the node, a Widget created through its webhooks with OLM v0's certificate", func(ctx SpecContext) {
		start := time.Now()
		out := runTool(ctx, tool, "--kubeconfig", env.kubeconfig,
			"--bundle-dir", filepath.Join(work, "bundles", migrateVersion), "--package", widgetbundle.Package,
			"--namespace", migrateNamespace, "--channel", widgetbundle.Channel,
			// The catalog listing the bundle, as catalogd pulls it: migrate makes it the Catalog's image.
			"--catalog-image", fix.Catalogs["v1"], "--catalog-source", migrateCatalogSource, "--catalog-namespace", migrateCatalogNS,
			"--subscription", migrateSubscription, "--operator-group", migrateOperatorGroup)
		Expect(out).To(ContainSubstring("Subscription %s/%s: package %s", migrateNamespace, migrateSubscription, widgetbundle.Package))
		Expect(out).To(ContainSubstring("installedCSV %s", widgetbundle.CSVName(migrateVersion)))
		pods := waitPodsReady(ctx, 3*time.Minute)
		fmt.Fprintf(GinkgoWriter, "OLM v0's state written and its pod Ready in %s\n", time.Since(start).Round(100*time.Millisecond))

		By("the pod template is OLM v0's: its certificate volumes, its olmcahash, OPERATOR_CONDITION_NAME")
		d := migrateDeploymentNow(ctx, Default)
		var volumes []string
		for _, v := range d.Spec.Template.Spec.Volumes {
			volumes = append(volumes, v.Name)
		}
		Expect(volumes).To(ConsistOf("apiservice-cert", "webhook-cert"))
		Expect(d.Spec.Template.Annotations).To(HaveKey("olmcahash"))
		Expect(fmt.Sprint(d.Spec.Template.Spec.Containers[0].Env)).To(ContainSubstring("OPERATOR_CONDITION_NAME " + widgetbundle.CSVName(migrateVersion)))

		By("the operator serves the certificate OLM v0 signed")
		cert, secret := secretCert(ctx, Default)
		v0CA = firstCert(Default, secret.Data["olmCAKey"])
		Expect(cert.CheckSignatureFrom(v0CA)).To(Succeed())
		Eventually(func(g Gomega) {
			serial, _ := servingSerial(ctx, g, pods[0].Name)
			g.Expect(serial).To(Equal(cert.SerialNumber.String()))
		}).WithContext(ctx).WithTimeout(30 * time.Second).Should(Succeed())
		hooks := widgetWebhooks(ctx, dc)
		Expect(hooks).To(HaveLen(3), "OLM v0's validating, mutating and conversion webhooks: %v", hooks)
		for _, w := range hooks {
			Expect(w.trusts(v0CA)).To(BeTrue(), "%v does not trust OLM v0's CA", w)
		}

		By("a Widget created through the mutating and validating webhooks, reconciled by the operator")
		_, err := env.clientset.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: widgetNamespace}}, metav1.CreateOptions{})
		Expect(err).NotTo(HaveOccurred())
		// kube-proxy programs the webhook's ClusterIP a moment after the endpoint is ready: only a
		// refused connection is retried, for seconds.
		Eventually(func(g Gomega) {
			_, err := dc.Resource(widgetV1).Namespace(widgetNamespace).Create(ctx, widget("v1", "before-migration", map[string]any{"size": int64(3)}), metav1.CreateOptions{})
			if err != nil && !strings.Contains(err.Error(), "connect: connection refused") {
				StopTrying("creating Widget before-migration").Wrap(err).Now()
			}
			g.Expect(err).NotTo(HaveOccurred(), "the webhook's ClusterIP is not routed yet")
		}).WithContext(ctx).WithTimeout(15 * time.Second).Should(Succeed())
		Eventually(func(g Gomega) {
			got, err := dc.Resource(widgetV1).Namespace(widgetNamespace).Get(ctx, "before-migration", metav1.GetOptions{})
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(got.GetLabels()).To(HaveKeyWithValue("widgets.olmv1.io/defaulted", "true"), "set by the mutating webhook")
			g.Expect(got.Object["status"]).To(HaveKeyWithValue("phase", "Reconciled"))
			g.Expect(got.Object["status"]).To(HaveKeyWithValue("operatorVersion", migrateVersion))
			widgetFirst = got
		}).WithContext(ctx).WithTimeout(time.Minute).Should(Succeed())
		_, err = dc.Resource(widgetV1).Namespace(widgetNamespace).Create(ctx, widget("v1", "too-big", map[string]any{"size": int64(42)}), metav1.CreateOptions{})
		Expect(err).To(MatchError(ContainSubstring("widget-operator: spec.size must be between 0 and 10, got 42")))
		By("read as v2 through the conversion webhook OLM v0 set in the CRD")
		v2, err := dc.Resource(widgetV2).Namespace(widgetNamespace).Get(ctx, "before-migration", metav1.GetOptions{})
		Expect(err).NotTo(HaveOccurred())
		Expect(nestedInt(v2.Object, "spec", "replicas")).To(Equal(int64(3)))
	})

	It("moves it with `kubectl olmv1 migrate` to an Installed and Healthy Operator: same Deployment, same pods, the Widget intact, OLM v0's Subscription and CSV gone", func(ctx SpecContext) {
		before = workloads(ctx, Default, ops)
		deployment = migrateDeploymentNow(ctx, Default)
		sets = replicaSets(ctx, Default, deployment)
		fmt.Fprintf(GinkgoWriter, "before: Deployment %+v, ReplicaSets %v; %s\n", before, sets, serviceSummary(ctx))

		caller = startWebhookCaller(dc)
		started = time.Now()
		out, errOut, err := kubectlOLMv1(ctx, "migrate", migrateSubscription, "-n", migrateNamespace, "--timeout", "3m")
		migrated = time.Now()
		took := migrated.Sub(started).Round(100 * time.Millisecond)
		fmt.Fprintf(GinkgoWriter, "kubectl olmv1 migrate took %s\n", took)
		AddReportEntry("kubectl olmv1 migrate", took.String())
		svc, err := env.clientset.CoreV1().Services(migrateNamespace).Get(ctx, migrateService, metav1.GetOptions{})
		Expect(err).NotTo(HaveOccurred())
		svcWritten, svcManager := lastWrite(svc)
		fmt.Fprintf(GinkgoWriter, "after: %s (last written at +%s by %s)\n", serviceSummary(ctx), svcWritten.Sub(started).Round(time.Second), svcManager)
		Expect(err).NotTo(HaveOccurred(), "kubectl olmv1 migrate failed\nstdout:\n%s\nstderr:\n%s", out, errOut)
		Expect(out).To(ContainSubstring("Subscription %s/%s: migrated to Operator %s", migrateNamespace, migrateSubscription, widgetOperator))

		By("the Operator is Installed and Healthy, its migration Complete")
		Eventually(func(g Gomega) {
			expectInstalledAndHealthy(ctx, g, dc, ops)
		}).WithContext(ctx).WithTimeout(time.Minute).Should(Succeed())
		op, err := dc.Resource(operatorGVR).Get(ctx, widgetOperator, metav1.GetOptions{})
		Expect(err).NotTo(HaveOccurred())
		Expect(op.GetAnnotations()).To(HaveKeyWithValue("operators.operatorframework.io/migration-phase", "Complete"))
		v, _, _ := unstructured.NestedString(op.Object, "status", "installedBundle", "version")
		Expect(v).To(Equal(migrateVersion))

		By("the same Deployment with the same pod template and ReplicaSets, the same pods, none restarted")
		after := migrateDeploymentNow(ctx, Default)
		Expect(after.UID).To(Equal(deployment.UID), "the Deployment was replaced")
		Expect(equality.Semantic.DeepEqual(after.Spec.Template, deployment.Spec.Template)).To(BeTrue(),
			"the pod template changed:\nbefore %s\nafter  %s", mustJSON(deployment.Spec.Template), mustJSON(after.Spec.Template))
		if after.Generation != deployment.Generation {
			// apps bumps the generation when the Deployment's own annotations change, and OLM v1 sets
			// olm.targetNamespaces and olm.operatorNamespace there (docs/migration.md): allowed, as
			// long as the spec is the same.
			Expect(equality.Semantic.DeepEqual(after.Spec, deployment.Spec)).To(BeTrue(),
				"generation %d -> %d with another spec:\nbefore %s\nafter  %s", deployment.Generation, after.Generation, mustJSON(deployment.Spec), mustJSON(after.Spec))
			Expect(after.Annotations).NotTo(Equal(deployment.Annotations), "generation %d -> %d with the same spec and annotations", deployment.Generation, after.Generation)
			fmt.Fprintf(GinkgoWriter, "Deployment generation %d -> %d: its own annotations %v -> %v (the pod template is unchanged)\n",
				deployment.Generation, after.Generation, deployment.Annotations, after.Annotations)
		}
		Expect(after.Labels).To(HaveKeyWithValue("core.rukpak.io/owner-name", widgetOperator), "the Deployment is OLM v1's")
		Expect(after.Labels).NotTo(HaveKey("olm.owner"), "OLM v0's marks are removed")
		Expect(after.OwnerReferences).To(BeEmpty(), "no ownerReference to OLM v0's CSV is left")
		Expect(replicaSets(ctx, Default, after)).To(Equal(sets), "no new ReplicaSet")
		Consistently(func(g Gomega) {
			expectSamePods(g, workloads(ctx, g, ops), before)
		}).WithContext(ctx).WithTimeout(5 * time.Second).WithPolling(time.Second).Should(Succeed())

		By("the Widget is intact")
		got, err := dc.Resource(widgetV1).Namespace(widgetNamespace).Get(ctx, "before-migration", metav1.GetOptions{})
		Expect(err).NotTo(HaveOccurred())
		Expect(got.GetUID()).To(Equal(widgetFirst.GetUID()))
		Expect(got.Object["spec"]).To(Equal(widgetFirst.Object["spec"]))
		Expect(got.GetLabels()).To(Equal(widgetFirst.GetLabels()))
		Expect(got.Object["status"]).To(HaveKeyWithValue("phase", "Reconciled"))

		By("OLM v0's Subscription and CSV are gone")
		_, err = dc.Resource(subscriptionGVR).Namespace(migrateNamespace).Get(ctx, migrateSubscription, metav1.GetOptions{})
		Expect(apierrors.IsNotFound(err)).To(BeTrue(), "Subscription: %v", err)
		Eventually(func() bool {
			_, err := dc.Resource(csvGVR).Namespace(migrateNamespace).Get(ctx, widgetbundle.CSVName(migrateVersion), metav1.GetOptions{})
			return apierrors.IsNotFound(err)
		}).WithContext(ctx).WithTimeout(time.Minute).Should(BeTrue(), "the CSV (deleted with propagationPolicy Orphan) is still there")
		expectSamePods(Default, workloads(ctx, Default, ops), before)
	})

	It("answers webhook calls with OLM v1's certificate once kubelet has refreshed the Secret volume, and no pod restarted", func(ctx SpecContext) {
		pods := waitPodsReady(ctx, time.Minute)
		rukpakCA, err := env.clientset.CoreV1().Secrets(namespace).Get(ctx, webhookCASecret, metav1.GetOptions{})
		Expect(err).NotTo(HaveOccurred())
		ca := firstCert(Default, rukpakCA.Data["tls.crt"])

		By("waiting until kubelet has given the pod the certificate OLM v1 wrote into the Secret and the operator serves it")
		var cert *x509.Certificate
		var loaded time.Time
		Eventually(func(g Gomega) {
			cert, _ = secretCert(ctx, g)
			g.Expect(cert.CheckSignatureFrom(ca)).To(Succeed(), "the Secret does not hold a certificate of OLM v1's CA yet")
			var serial string
			serial, loaded = servingSerial(ctx, g, pods[0].Name)
			g.Expect(serial).To(Equal(cert.SerialNumber.String()), "the operator does not serve the Secret's certificate yet")
		}).WithContext(ctx).WithTimeout(4 * time.Minute).WithPolling(time.Second).Should(Succeed())
		Expect(cert.CheckSignatureFrom(v0CA)).NotTo(Succeed())
		_, secret := secretCert(ctx, Default)
		written, manager := lastWrite(secret)
		calls := caller.stop()
		var failed, late []string
		for _, c := range calls {
			if c.err == nil {
				continue
			}
			f := fmt.Sprintf("+%s..+%s: %v", c.start.Sub(started).Round(100*time.Millisecond), c.end.Sub(started).Round(100*time.Millisecond), c.err)
			failed = append(failed, f)
			if c.start.After(loaded) && c.start.After(migrated) {
				late = append(late, f)
			}
		}
		fmt.Fprintf(GinkgoWriter, "migrate started at +0s and returned at +%s; the Secret was last written at +%s (by %s); the operator loaded OLM v1's certificate at +%s (%s after migrate returned); %d of %d webhook calls made meanwhile failed %v\n",
			migrated.Sub(started).Round(100*time.Millisecond), written.Sub(started).Round(time.Second), manager,
			loaded.Sub(started).Round(100*time.Millisecond), loaded.Sub(migrated).Round(100*time.Millisecond), len(failed), len(calls), failed)
		Expect(late).To(BeEmpty(), "webhook calls made after migrate returned and the operator served OLM v1's certificate failed")
		AddReportEntry("operator serving OLM v1's certificate, after migrate returned", loaded.Sub(migrated).Round(100*time.Millisecond).String())
		Expect(calls).NotTo(BeEmpty())

		By("every webhook trusts OLM v1's CA; a new Widget passes the webhooks, is defaulted and reconciled; v2 reads convert")
		hooks := widgetWebhooks(ctx, dc)
		fmt.Fprintf(GinkgoWriter, "the operator's webhooks: %v\n", hooks)
		Expect(hooks).To(HaveLen(3), "one validating, one mutating and one conversion webhook (OLM v0's configurations are deleted): %v", hooks)
		for _, w := range hooks {
			Expect(w.trusts(ca)).To(BeTrue(), "%v does not trust OLM v1's CA", w)
		}
		_, err = dc.Resource(widgetV1).Namespace(widgetNamespace).Create(ctx, widget("v1", "after-migration", map[string]any{}), metav1.CreateOptions{})
		Expect(err).NotTo(HaveOccurred())
		Eventually(func(g Gomega) {
			got, err := dc.Resource(widgetV1).Namespace(widgetNamespace).Get(ctx, "after-migration", metav1.GetOptions{})
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(nestedInt(got.Object, "spec", "size")).To(Equal(int64(1)), "defaulted by the mutating webhook")
			g.Expect(got.Object["status"]).To(HaveKeyWithValue("phase", "Reconciled"))
		}).WithContext(ctx).WithTimeout(time.Minute).Should(Succeed())
		v2, err := dc.Resource(widgetV2).Namespace(widgetNamespace).Get(ctx, "before-migration", metav1.GetOptions{})
		Expect(err).NotTo(HaveOccurred())
		Expect(nestedInt(v2.Object, "spec", "replicas")).To(Equal(int64(3)))
		_, err = dc.Resource(widgetV1).Namespace(widgetNamespace).Create(ctx, widget("v1", "too-big-after", map[string]any{"size": int64(42)}), metav1.CreateOptions{})
		Expect(err).To(MatchError(ContainSubstring("widget-operator: spec.size must be between 0 and 10, got 42")))

		expectSamePods(Default, workloads(ctx, Default, ops), before)
	})
})

// expectSamePods checks that every Deployment of now is the object of before with the same pods (UID,
// pod-template-hash, no restart). The generation is checked apart: it may move when only the
// Deployment's own annotations changed.
func expectSamePods(g Gomega, now, before map[string]workload) {
	g.Expect(now).To(HaveLen(len(before)))
	for key, w := range before {
		g.Expect(now).To(HaveKey(key))
		g.Expect(now[key].UID).To(Equal(w.UID), "Deployment %s replaced", key)
		g.Expect(now[key].Pods).To(Equal(w.Pods), "pods of Deployment %s (uid, pod-template-hash, restarts)", key)
	}
}
