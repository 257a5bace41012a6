package suite

import (
	"context"
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	helmchart "helm.sh/helm/v3/pkg/chart"
	appsv1 "k8s.io/api/apps/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/olmv1/olmv1/e2e/chart"
	"github.com/olmv1/olmv1/e2e/chart/images"
)

// The chart spec installs deploy/charts/olmv1 with the Helm Go library into the suite's cluster, next
// to the controllers the suite runs as processes. It coexists with them:
//   - its objects live in their own namespace (chartNamespace) and its cluster-scoped objects carry the
//     release name (chartRelease-…), so nothing collides with the suite's;
//   - the CRDs are the suite's already: Helm's crds/ handling skips CRDs that exist;
//   - the CatalogMetadata APIService has a fixed name: the spec (Serial) sets the suite's aside for the
//     duration and puts it back afterwards, waiting until it is Available again.
//
// On the local control plane the pods run on kwok fake nodes: Deployments become Available but nothing
// serves, so the APIService stays unavailable (its Service's ClusterIP is a loopback address nothing
// listens on). With E2E_CHART_REAL_CLUSTER=1 (make kind-e2e) the spec also waits for the chart's
// catalogd to serve the APIService.
const (
	chartRelease   = "olmv1-e2e"
	chartNamespace = "olmv1-chart-e2e"
	apiServiceName = "v1alpha1.metadata.catalogd.operatorframework.io"
)

var _ = Describe("Helm chart", Label("chart"), Serial, Ordered, func() {
	var (
		hc       *chart.Client
		ch       *helmchart.Chart
		dc       dynamic.Interface
		c        client.Client
		vals     map[string]any
		caBundle []byte
	)
	chartSelector := "app.kubernetes.io/instance=" + chartRelease

	BeforeAll(func(ctx SpecContext) {
		var err error
		dc, err = dynamic.NewForConfig(env.cfg)
		Expect(err).NotTo(HaveOccurred())
		c = newClient(env.cfg)
		ch, err = chart.Load(chart.Dir(env.repoRoot))
		Expect(err).NotTo(HaveOccurred())
		hc, err = chart.NewClient(env.kubeconfig, "default", GinkgoWriter)
		Expect(err).NotTo(HaveOccurred())

		vals = map[string]any{
			"namespace": map[string]any{"name": chartNamespace},
			"tls":       map[string]any{"mode": "selfSigned"},
			"logLevel":  "debug",
		}
		if reg := os.Getenv("E2E_CHART_IMAGE_REGISTRY"); reg != "" {
			By("using the images loaded into the cluster: " + reg)
			vals["image"] = map[string]any{"registry": reg, "tag": os.Getenv("E2E_CHART_IMAGE_TAG")}
		} else {
			binDir := chartBinDir()
			By("building the controller images from " + binDir + " and pushing them to the local registry " + env.registry.Addr)
			imgs, err := images.BuildAll(binDir, images.Options{CABundle: images.DefaultCABundle()})
			Expect(err).NotTo(HaveOccurred())
			digests, err := images.PushAll(ctx, imgs, env.registry.Addr+"/olmv1", "e2e", true)
			Expect(err).NotTo(HaveOccurred())
			vals["image"] = map[string]any{"registry": env.registry.Addr + "/olmv1"}
			for key, n := range map[string]string{"catalogd": "catalogd", "rukpak": "rukpak", "operatorController": "operator-controller"} {
				vals[key] = map[string]any{"image": map[string]any{"repository": n, "digest": digests[n].DigestStr()}}
			}
		}

		By("setting the suite's APIService " + apiServiceName + " aside while the chart owns that name")
		apiServices := dc.Resource(apiServiceGVR)
		// The suite's catalogd registers it (--metadata-apiservice=local, catalogmetadata_test.go) once
		// it runs: when this spec comes first, wait for that, or catalogd would create it after the
		// delete below, under the chart's feet.
		var saved *unstructured.Unstructured
		Eventually(func() error {
			var err error
			saved, err = apiServices.Get(ctx, apiServiceName, metav1.GetOptions{})
			return err
		}).WithContext(ctx).WithTimeout(time.Minute).WithPolling(100*time.Millisecond).Should(Succeed(), "the suite's catalogd registers %s", apiServiceName)
		Expect(apiServices.Delete(ctx, apiServiceName, metav1.DeleteOptions{})).To(Succeed())
		DeferCleanup(func(ctx SpecContext) {
			// Whatever happened, leave no release behind, then give the suite its APIService back.
			if err := hc.Uninstall(chartRelease, 2*time.Minute); err != nil && !strings.Contains(err.Error(), "not found") {
				fmt.Fprintf(GinkgoWriter, "chart cleanup: %v\n", err)
			}
			if saved == nil {
				return
			}
			By("restoring the suite's APIService")
			Eventually(func() error {
				_, err := apiServices.Get(ctx, apiServiceName, metav1.GetOptions{})
				return err
			}).WithContext(ctx).WithTimeout(time.Minute).Should(Satisfy(apierrors.IsNotFound))
			restored := &unstructured.Unstructured{Object: map[string]any{
				"apiVersion": saved.GetAPIVersion(), "kind": saved.GetKind(),
				"metadata": map[string]any{"name": saved.GetName(), "labels": toAny(saved.GetLabels())},
				"spec":     saved.Object["spec"],
			}}
			_, err := apiServices.Create(ctx, restored, metav1.CreateOptions{})
			Expect(err).NotTo(HaveOccurred())
			if findCondition(saved, "Available")["status"] == "True" {
				waitCondition(ctx, c, apiServiceNamed(apiServiceName), "Available", "True", 2*time.Minute, anyGeneration())
			}
		})
	})

	It("installs the chart with helm install", func(ctx SpecContext) {
		rel, err := hc.Install(ctx, ch, chartRelease, vals, 2*time.Minute)
		Expect(err).NotTo(HaveOccurred())
		Expect(rel.Info.Status.String()).To(Equal("deployed"))
		Expect(rel.Version).To(Equal(1))
	})

	It("rolls out catalogd, rukpak and operator-controller until their Deployments are Available", func(ctx SpecContext) {
		for _, name := range images.Names {
			By("waiting for Deployment " + chartNamespace + "/" + name)
			Eventually(func(g Gomega) {
				d, err := env.clientset.AppsV1().Deployments(chartNamespace).Get(ctx, name, metav1.GetOptions{})
				g.Expect(err).NotTo(HaveOccurred())
				g.Expect(deploymentAvailable(d)).To(BeTrue(), "conditions %v", d.Status.Conditions)
				g.Expect(d.Status.ReadyReplicas).To(Equal(int32(1)))
			}).WithContext(ctx).WithTimeout(2 * time.Minute).WithPolling(250 * time.Millisecond).Should(Succeed())
			pods, err := env.clientset.CoreV1().Pods(chartNamespace).List(ctx, metav1.ListOptions{LabelSelector: "app.kubernetes.io/name=" + name})
			Expect(err).NotTo(HaveOccurred())
			Expect(pods.Items).To(HaveLen(1))
			pod := pods.Items[0]
			// Admitted by the namespace's restricted Pod Security level, with the image from the registry.
			Expect(*pod.Spec.SecurityContext.RunAsNonRoot).To(BeTrue())
			Expect(pod.Spec.Containers[0].Image).To(HavePrefix(imageRegistry(vals) + "/" + name))
			if env.ownCluster != nil {
				node, err := env.clientset.CoreV1().Nodes().Get(ctx, pod.Spec.NodeName, metav1.GetOptions{})
				Expect(err).NotTo(HaveOccurred())
				Expect(node.Labels).To(HaveKeyWithValue("type", "kwok"), "pod %s runs on a kwok fake node", pod.Name)
			}
		}
	})

	It("gives the APIService a caBundle that verifies every component's serving certificate", func(ctx SpecContext) {
		as, err := dc.Resource(apiServiceGVR).Get(ctx, apiServiceName, metav1.GetOptions{})
		Expect(err).NotTo(HaveOccurred())
		Expect(as.GetLabels()).To(HaveKeyWithValue("app.kubernetes.io/instance", chartRelease))
		caBundle = apiServiceCABundle(as)
		for _, name := range images.Names {
			verifyServingSecret(ctx, caBundle, name)
		}
		if os.Getenv("E2E_CHART_REAL_CLUSTER") == "1" {
			By("waiting for the chart's catalogd to serve the APIService (a real cluster: pods run)")
			waitCondition(ctx, c, apiServiceNamed(apiServiceName), "Available", "True", 3*time.Minute, anyGeneration())
			_, err := dc.Resource(catalogMetadataGVR).List(ctx, metav1.ListOptions{Limit: 1})
			Expect(err).NotTo(HaveOccurred())
		}
	})

	It("keeps the certificates on upgrade", func(ctx SpecContext) {
		crt := func() []byte {
			s, err := env.clientset.CoreV1().Secrets(chartNamespace).Get(ctx, "catalogd-tls", metav1.GetOptions{})
			Expect(err).NotTo(HaveOccurred())
			return s.Data["tls.crt"]
		}
		before := crt()
		rel, err := hc.Install(ctx, ch, chartRelease, vals, 2*time.Minute)
		Expect(err).NotTo(HaveOccurred())
		Expect(rel.Version).To(Equal(2))
		as, err := dc.Resource(apiServiceGVR).Get(ctx, apiServiceName, metav1.GetOptions{})
		Expect(err).NotTo(HaveOccurred())
		Expect(apiServiceCABundle(as)).To(Equal(caBundle), "an upgrade must keep the CA (looked up from the cluster)")
		Expect(crt()).To(Equal(before))

	})

	It("runs each component with the chart's flags, ServiceAccount and certificate, and reloads a rotated certificate", func(ctx SpecContext) {
		expectChartComponentsServeAndReload(ctx, hc, ch, dc, vals, caBundle)
	})

	It("runs replicas: 2 of every component: two Available pods spread over nodes, a PodDisruptionBudget, one leader, and a standby that takes over a SIGKILLed leader", func(ctx SpecContext) {
		expectChartReplicasFailOver(ctx, hc, ch, dc, vals)
	})

	It("removes everything it installed on helm uninstall", func(ctx SpecContext) {
		Expect(hc.Uninstall(chartRelease, 2*time.Minute)).To(Succeed())
		Eventually(func() error {
			_, err := env.clientset.CoreV1().Namespaces().Get(ctx, chartNamespace, metav1.GetOptions{})
			return err
		}).WithContext(ctx).WithTimeout(2*time.Minute).WithPolling(250*time.Millisecond).Should(Satisfy(apierrors.IsNotFound),
			"namespace %s (and with it the Deployments, Services, Secrets, Roles, NetworkPolicies) is deleted", chartNamespace)
		_, err := dc.Resource(apiServiceGVR).Get(ctx, apiServiceName, metav1.GetOptions{})
		Expect(apierrors.IsNotFound(err)).To(BeTrue(), "APIService: %v", err)
		rbac := env.clientset.RbacV1()
		crs, err := rbac.ClusterRoles().List(ctx, metav1.ListOptions{LabelSelector: chartSelector})
		Expect(err).NotTo(HaveOccurred())
		Expect(crs.Items).To(BeEmpty())
		crbs, err := rbac.ClusterRoleBindings().List(ctx, metav1.ListOptions{LabelSelector: chartSelector})
		Expect(err).NotTo(HaveOccurred())
		Expect(crbs.Items).To(BeEmpty())
		rbs, err := rbac.RoleBindings("kube-system").List(ctx, metav1.ListOptions{LabelSelector: chartSelector})
		Expect(err).NotTo(HaveOccurred())
		Expect(rbs.Items).To(BeEmpty())
		secrets, err := env.clientset.CoreV1().Secrets("default").List(ctx, metav1.ListOptions{LabelSelector: "owner=helm,name=" + chartRelease})
		Expect(err).NotTo(HaveOccurred())
		Expect(secrets.Items).To(BeEmpty(), "Helm's release records")
		// The CRDs stay (Helm never deletes crds/; they were the suite's anyway).
		_, err = dc.Resource(schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}).
			Get(ctx, "catalogs.catalogd.operatorframework.io", metav1.GetOptions{})
		Expect(err).NotTo(HaveOccurred())
	})
})

func deploymentAvailable(d *appsv1.Deployment) bool {
	for _, c := range d.Status.Conditions {
		if c.Type == appsv1.DeploymentAvailable && c.Status == corev1.ConditionTrue {
			return true
		}
	}
	return false
}

func imageRegistry(vals map[string]any) string {
	return vals["image"].(map[string]any)["registry"].(string)
}

// apiServiceCABundle returns the APIService's caBundle, checking that it is a PEM CA certificate.
func apiServiceCABundle(as *unstructured.Unstructured) []byte {
	s, _, _ := unstructured.NestedString(as.Object, "spec", "caBundle")
	Expect(s).NotTo(BeEmpty(), "APIService %s has no caBundle", as.GetName())
	// JSON carries []byte as base64; unstructured keeps the string.
	ca := mustBase64(s)
	block, _ := pem.Decode(ca)
	Expect(block).NotTo(BeNil(), "caBundle is not PEM")
	cert, err := x509.ParseCertificate(block.Bytes)
	Expect(err).NotTo(HaveOccurred())
	Expect(cert.IsCA).To(BeTrue(), "caBundle certificate %s is not a CA", cert.Subject)
	Expect(time.Now()).To(BeTemporally("<", cert.NotAfter))
	return ca
}

// verifyServingSecret checks that Secret <name>-tls holds a key pair whose certificate is valid for the
// component's Service name under caPEM.
func verifyServingSecret(ctx SpecContext, caPEM []byte, name string) {
	s, err := env.clientset.CoreV1().Secrets(chartNamespace).Get(ctx, name+"-tls", metav1.GetOptions{})
	Expect(err).NotTo(HaveOccurred())
	Expect(s.Type).To(Equal(corev1.SecretTypeTLS))
	pool := x509.NewCertPool()
	Expect(pool.AppendCertsFromPEM(caPEM)).To(BeTrue())
	block, _ := pem.Decode(s.Data[corev1.TLSCertKey])
	Expect(block).NotTo(BeNil())
	cert, err := x509.ParseCertificate(block.Bytes)
	Expect(err).NotTo(HaveOccurred())
	_, err = cert.Verify(x509.VerifyOptions{Roots: pool, DNSName: name + "." + chartNamespace + ".svc"})
	Expect(err).NotTo(HaveOccurred(), "%s's serving certificate against the APIService caBundle", name)
	Expect(s.Data[corev1.TLSPrivateKeyKey]).NotTo(BeEmpty())
}

func mustBase64(s string) []byte {
	b, err := base64.StdEncoding.DecodeString(s)
	Expect(err).NotTo(HaveOccurred(), "caBundle is not base64")
	return b
}

func toAny(m map[string]string) map[string]any {
	out := map[string]any{}
	for k, v := range m {
		out[k] = v
	}
	return out
}

var (
	chartCatalogGVR          = schema.GroupVersionResource{Group: "catalogd.operatorframework.io", Version: "v1alpha1", Resource: "catalogs"}
	chartBundleDeploymentGVR = schema.GroupVersionResource{Group: "core.rukpak.io", Version: "v1alpha1", Resource: "bundledeployments"}
	chartOperatorGVR         = schema.GroupVersionResource{Group: "operators.operatorframework.io", Version: "v1alpha1", Resource: "operators"}
)

func chartBinDir() string {
	if d := os.Getenv("E2E_BIN_DIR"); d != "" {
		return d
	}
	return filepath.Join(env.repoRoot, "bin")
}

func secretData(ctx context.Context, name string) map[string][]byte {
	s, err := env.clientset.CoreV1().Secrets(chartNamespace).Get(ctx, name, metav1.GetOptions{})
	Expect(err).NotTo(HaveOccurred())
	return s.Data
}

func serviceAccountToken(ctx context.Context, sa string) string {
	tr, err := env.clientset.CoreV1().ServiceAccounts(chartNamespace).CreateToken(ctx, sa,
		&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](3600)}}, metav1.CreateOptions{})
	Expect(err).NotTo(HaveOccurred())
	return tr.Status.Token
}

// scraperToken is the token of a ServiceAccount bound to the chart's <release>-metrics-reader.
func scraperToken(ctx context.Context) string {
	_, err := env.clientset.CoreV1().ServiceAccounts(chartNamespace).Create(ctx,
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "scraper"}}, metav1.CreateOptions{})
	Expect(err).NotTo(HaveOccurred())
	crb := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: chartRelease + "-e2e-scraper"},
		RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: chartRelease + "-metrics-reader"},
		Subjects:   []rbacv1.Subject{{Kind: "ServiceAccount", Name: "scraper", Namespace: chartNamespace}},
	}
	_, err = env.clientset.RbacV1().ClusterRoleBindings().Create(ctx, crb, metav1.CreateOptions{})
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(func(ctx SpecContext) {
		Expect(env.clientset.RbacV1().ClusterRoleBindings().Delete(ctx, crb.Name, metav1.DeleteOptions{})).To(Succeed())
	})
	return serviceAccountToken(ctx, "scraper")
}

// chartTakeoverBound is the failover bound for the chart's replicas: the lease duration the
// chart spec sets through extraArgs (the ha spec's) + 5 s.
const chartTakeoverBound = haLeaseDuration + 5*time.Second

// skipIfChartControllersWouldCompete skips a spec that runs the chart's controllers as processes when
// another spec left a Catalog, BundleDeployment or Operator: a second set of controllers would
// reconcile it too.
func skipIfChartControllersWouldCompete(ctx context.Context, dc dynamic.Interface) {
	for _, gvr := range []schema.GroupVersionResource{chartCatalogGVR, chartBundleDeploymentGVR, chartOperatorGVR} {
		l, err := dc.Resource(gvr).List(ctx, metav1.ListOptions{Limit: 1})
		Expect(err).NotTo(HaveOccurred())
		if len(l.Items) > 0 {
			Skip(fmt.Sprintf("a %s left by another spec exists: a second set of controllers would reconcile it too (run with E2E_LABELS=chart)", gvr.Resource))
		}
	}
}

// chartPodFailovers is the failover check on a real cluster (E2E_CHART_REAL_CLUSTER=1), where the
// chart's pods run: for each component, the pod holding the Lease (its identity starts with the pod's
// name, the hostname) is deleted with no grace period (the kubelet SIGKILLs it), and a running pod of
// the component other than it must hold the Lease within chartTakeoverBound.
func chartPodFailovers(ctx context.Context) {
	killed := map[string]string{}
	holders := map[string]string{}
	var killedAt time.Time
	for _, name := range images.Names {
		By(name + ": the pod that holds the Lease is SIGKILLed (deleted with no grace period)")
		var leader string
		Eventually(func(g Gomega) {
			h := chartLeaseHolder(ctx, name)
			g.Expect(h).NotTo(BeEmpty(), "the %s Lease has a holder", name)
			pods, err := env.clientset.CoreV1().Pods(chartNamespace).List(ctx, metav1.ListOptions{LabelSelector: "app.kubernetes.io/name=" + name})
			g.Expect(err).NotTo(HaveOccurred())
			leader = ""
			for _, p := range pods.Items {
				if p.DeletionTimestamp == nil && strings.HasPrefix(h, p.Name+"_") {
					leader = p.Name
				}
			}
			g.Expect(leader).NotTo(BeEmpty(), "holder %q is one of the %s pods", h, name)
			holders[name] = h
		}).WithContext(ctx).WithTimeout(haLeaseDuration + 30*time.Second).WithPolling(250 * time.Millisecond).Should(Succeed())
		killed[name] = leader
	}
	killedAt = time.Now()
	for _, name := range images.Names {
		Expect(env.clientset.CoreV1().Pods(chartNamespace).Delete(ctx, killed[name], metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)})).To(Succeed())
	}
	took := awaitLeaseTakeovers(ctx, holders, killedAt, func(g Gomega, name, h string) {
		g.Expect(h).NotTo(HavePrefix(killed[name]+"_"), "%s: the killed pod holds the Lease again", name)
		fmt.Fprintf(GinkgoWriter, "chart: %s pod failover %.2fs (pod %s SIGKILLed, new holder %s, lease %v)\n", name, time.Since(killedAt).Seconds(), killed[name], h, haLeaseDuration)
	})
	for _, name := range images.Names {
		AddReportEntry("chart "+name+" pod failover", took[name].String())
		Expect(took[name]).To(BeNumerically("<=", chartTakeoverBound))
	}
}

// chartLeaseHolder returns the holderIdentity of component's Lease in the chart's namespace.
func chartLeaseHolder(ctx context.Context, component string) string {
	l, err := env.clientset.CoordinationV1().Leases(chartNamespace).Get(ctx, component+".olmv1.operatorframework.io", metav1.GetOptions{})
	if err != nil || l.Spec.HolderIdentity == nil {
		return ""
	}
	return *l.Spec.HolderIdentity
}

// chartAcquired reports whether p logged acquiring its Lease in the chart's namespace.
func chartAcquired(p *chartProcess) bool {
	return logAcquiredLease(p.log, chartNamespace+"/"+p.name+".olmv1.operatorframework.io")
}

// chartLeader waits until exactly one of ps leads and the Lease names a holder.
func chartLeader(ctx context.Context, component string, ps []*chartProcess) (int, string) {
	leader, holder := -1, ""
	Eventually(func(g Gomega) {
		var leaders []int
		for i, p := range ps {
			if !p.exited() && chartAcquired(p) {
				leaders = append(leaders, i)
			}
		}
		g.Expect(leaders).To(HaveLen(1), "processes that logged acquiring the %s Lease", component)
		holder = chartLeaseHolder(ctx, component)
		g.Expect(holder).NotTo(BeEmpty())
		leader = leaders[0]
	}).WithContext(ctx).WithTimeout(chartTakeoverBound + 30*time.Second).WithPolling(100 * time.Millisecond).Should(Succeed())
	return leader, holder
}
