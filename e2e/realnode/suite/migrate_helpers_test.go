package suite

import (
	"bytes"
	"context"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
)

// What the migrate spec installs the OLM v0 way, and where.
const (
	// migrateNamespace is the Subscription's namespace: the one the CSV suggests, as OperatorHub
	// installs it, with an AllNamespaces OperatorGroup.
	migrateNamespace     = "widget-operator-system"
	migrateCatalogNS     = "olm"
	migrateCatalogSource = "widget-catalog"
	migrateSubscription  = "widgets-subscription"
	migrateOperatorGroup = "global-operators"
	migrateDeployment    = "widget-operator"
	migrateVersion       = "1.0.0"
	// migrateService and migrateSecret are the webhook Service and serving Secret: OLM v0 names them
	// <deployment>-service and <service>-cert, and OLM v1 renders the same names.
	migrateService = migrateDeployment + "-service"
	migrateSecret  = migrateService + "-cert"
)

// olmV0CRDs are the CRDs v0install creates and the spec deletes again. OperatorCondition is not among
// them: the chart installs it (OLM v1 writes OperatorConditions too), so v0install finds it there.
var olmV0CRDs = []string{
	"catalogsources.operators.coreos.com",
	"clusterserviceversions.operators.coreos.com",
	"installplans.operators.coreos.com",
	"operatorgroups.operators.coreos.com",
	"subscriptions.operators.coreos.com",
	"operators.operators.coreos.com",
}

var (
	subscriptionGVR = schema.GroupVersionResource{Group: "operators.coreos.com", Version: "v1alpha1", Resource: "subscriptions"}
	csvGVR          = schema.GroupVersionResource{Group: "operators.coreos.com", Version: "v1alpha1", Resource: "clusterserviceversions"}
)

// buildV0Install compiles operator-controller/test/tools/v0install (OLM v0's state for a bundle
// directory, written with operator-controller's internal v0fixture) into dir and returns its path.
func buildV0Install(ctx context.Context, dir string) string {
	bin := filepath.Join(dir, "v0install")
	cmd := exec.CommandContext(ctx, "go", "build", "-o", bin, "./test/tools/v0install")
	cmd.Dir = filepath.Join(env.repoRoot, "operator-controller")
	out, err := cmd.CombinedOutput()
	Expect(err).NotTo(HaveOccurred(), "cd %s && go build -o %s ./test/tools/v0install\n%s", cmd.Dir, bin, out)
	return bin
}

// runTool runs bin with args and returns its combined output; it fails the spec on a non-zero exit.
func runTool(ctx context.Context, bin string, args ...string) string {
	cmd := exec.CommandContext(ctx, bin, args...)
	fmt.Fprintf(GinkgoWriter, "$ %s %s\n", filepath.Base(bin), strings.Join(args, " "))
	out, err := cmd.CombinedOutput()
	fmt.Fprintf(GinkgoWriter, "%s", out)
	Expect(err).NotTo(HaveOccurred(), "%s failed:\n%s", filepath.Base(bin), out)
	return string(out)
}

// kubectlOLMv1 runs the built kubectl-olmv1 as a user would, against the suite's cluster, and
// returns stdout, stderr and the error (an *exec.ExitError for a non-zero exit).
func kubectlOLMv1(ctx context.Context, args ...string) (string, string, error) {
	bin := filepath.Join(env.binDir, "kubectl-olmv1")
	_, err := os.Stat(bin)
	Expect(err).NotTo(HaveOccurred(), "%s: run `make build` first", bin)
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+env.kubeconfig)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	fmt.Fprintf(GinkgoWriter, "$ kubectl olmv1 %s\n", strings.Join(args, " "))
	err = cmd.Run()
	fmt.Fprintf(GinkgoWriter, "%s%s", out.String(), errOut.String())
	return out.String(), errOut.String(), err
}

// migrateDeploymentNow reads the operator's Deployment.
func migrateDeploymentNow(ctx context.Context, g Gomega) *appsv1.Deployment {
	d, err := env.clientset.AppsV1().Deployments(migrateNamespace).Get(ctx, migrateDeployment, metav1.GetOptions{})
	g.Expect(err).NotTo(HaveOccurred())
	return d
}

// replicaSets lists the UIDs and pod-template-hashes of the Deployment's ReplicaSets, sorted.
func replicaSets(ctx context.Context, g Gomega, d *appsv1.Deployment) []string {
	list, err := env.clientset.AppsV1().ReplicaSets(d.Namespace).List(ctx, metav1.ListOptions{LabelSelector: metav1.FormatLabelSelector(d.Spec.Selector)})
	g.Expect(err).NotTo(HaveOccurred())
	var out []string
	for _, rs := range list.Items {
		out = append(out, fmt.Sprintf("%s hash=%s", rs.UID, rs.Labels["pod-template-hash"]))
	}
	sort.Strings(out)
	return out
}

// waitPodsReady waits until the Deployment's pods are all Running and Ready on the suite's node,
// as many as it wants, and returns them.
func waitPodsReady(ctx context.Context, timeout time.Duration) []corev1.Pod {
	var pods []corev1.Pod
	Eventually(func(g Gomega) {
		d := migrateDeploymentNow(ctx, g)
		list, err := env.clientset.CoreV1().Pods(migrateNamespace).List(ctx, metav1.ListOptions{LabelSelector: metav1.FormatLabelSelector(d.Spec.Selector)})
		g.Expect(err).NotTo(HaveOccurred())
		pods = list.Items
		g.Expect(pods).To(HaveLen(int(*d.Spec.Replicas)), "pods: %s", podNames(pods))
		for i := range pods {
			g.Expect(pods[i].Spec.NodeName).To(Equal(env.nodeName))
			g.Expect(pods[i].Status.Phase).To(Equal(corev1.PodRunning), podSummary(&pods[i]))
			g.Expect(podReady(&pods[i])).To(BeTrue(), "pod %s: %s", pods[i].Name, podSummary(&pods[i]))
		}
	}).WithContext(ctx).WithTimeout(timeout).Should(Succeed())
	return pods
}

// servingSerial is the serial number of the last serving certificate the pod's operator says it
// loaded (widget-operator logs "serving certificate loaded" with serial=… on each load) and when
// kubelet recorded that log line; "" when there is none.
func servingSerial(ctx context.Context, g Gomega, pod string) (string, time.Time) {
	raw, err := env.clientset.CoreV1().Pods(migrateNamespace).GetLogs(pod, &corev1.PodLogOptions{Timestamps: true}).DoRaw(ctx)
	g.Expect(err).NotTo(HaveOccurred())
	serial, at := "", time.Time{}
	for _, line := range strings.Split(string(raw), "\n") {
		m := loadedSerial.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		t, err := time.Parse(time.RFC3339Nano, m[1])
		g.Expect(err).NotTo(HaveOccurred(), "log line %q", line)
		serial, at = m[2], t
	}
	return serial, at
}

var loadedSerial = regexp.MustCompile(`^(\S+) .*"serving certificate loaded".*\bserial="?([0-9]+)"?`)

// webhookCaller creates a Widget through the operator's webhooks every half second, from start until
// stop, and records each call's time and error: what a user of the operator sees while it moves.
type webhookCaller struct {
	mu     sync.Mutex
	calls  []webhookCall
	cancel context.CancelFunc
	done   chan struct{}
}

type webhookCall struct {
	start, end time.Time
	err        error
}

func startWebhookCaller(dc dynamic.Interface) *webhookCaller {
	ctx, cancel := context.WithCancel(context.Background())
	w := &webhookCaller{cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(w.done)
		tick := time.NewTicker(500 * time.Millisecond)
		defer tick.Stop()
		for n := 1; ; n++ {
			name := fmt.Sprintf("probe-%d", n)
			start := time.Now()
			_, err := dc.Resource(widgetV1).Namespace(widgetNamespace).Create(ctx, widget("v1", name, map[string]any{"size": int64(2)}), metav1.CreateOptions{})
			if ctx.Err() != nil {
				return
			}
			if err == nil {
				_ = dc.Resource(widgetV1).Namespace(widgetNamespace).Delete(ctx, name, metav1.DeleteOptions{})
			}
			w.mu.Lock()
			w.calls = append(w.calls, webhookCall{start: start, end: time.Now(), err: err})
			w.mu.Unlock()
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
		}
	}()
	return w
}

// stop ends the calls (once; later calls return the same) and returns them.
func (w *webhookCaller) stop() []webhookCall {
	w.cancel()
	<-w.done
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.calls
}

// serviceSummary says how the webhook Service routes: its ports (name, port, target) and those of its
// EndpointSlices with their addresses, for the log.
func serviceSummary(ctx context.Context) string {
	svc, err := env.clientset.CoreV1().Services(migrateNamespace).Get(ctx, migrateService, metav1.GetOptions{})
	if err != nil {
		return err.Error()
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Service %s:", svc.Name)
	for _, p := range svc.Spec.Ports {
		fmt.Fprintf(&b, " %s %d->%s", p.Name, p.Port, p.TargetPort.String())
	}
	slices, err := env.clientset.DiscoveryV1().EndpointSlices(migrateNamespace).List(ctx, metav1.ListOptions{LabelSelector: "kubernetes.io/service-name=" + migrateService})
	if err != nil {
		return b.String() + "; " + err.Error()
	}
	for _, es := range slices.Items {
		fmt.Fprintf(&b, "; EndpointSlice %s:", es.Name)
		for _, p := range es.Ports {
			fmt.Fprintf(&b, " %s %d", ptrString(p.Name), ptrInt32(p.Port))
		}
		for _, e := range es.Endpoints {
			fmt.Fprintf(&b, " %v", e.Addresses)
		}
	}
	return b.String()
}

func ptrString(p *string) string {
	if p == nil {
		return "<nil>"
	}
	return *p
}

func ptrInt32(p *int32) int32 {
	if p == nil {
		return 0
	}
	return *p
}

// lastWrite is the time of the latest write to obj recorded in its managedFields, and its manager.
func lastWrite(obj metav1.Object) (time.Time, string) {
	var at time.Time
	manager := ""
	for _, f := range obj.GetManagedFields() {
		if f.Time != nil && f.Time.After(at) {
			at, manager = f.Time.Time, f.Manager
		}
	}
	return at, manager
}

// secretCert is the serving certificate of the webhook Secret, and its content (tls.crt) as read.
func secretCert(ctx context.Context, g Gomega) (*x509.Certificate, *corev1.Secret) {
	s, err := env.clientset.CoreV1().Secrets(migrateNamespace).Get(ctx, migrateSecret, metav1.GetOptions{})
	g.Expect(err).NotTo(HaveOccurred())
	return firstCert(g, s.Data[corev1.TLSCertKey]), s
}

func firstCert(g Gomega, pemBytes []byte) *x509.Certificate {
	block, _ := pem.Decode(pemBytes)
	g.Expect(block).NotTo(BeNil(), "no PEM certificate in %q", pemBytes)
	c, err := x509.ParseCertificate(block.Bytes)
	g.Expect(err).NotTo(HaveOccurred())
	return c
}

// webhookTrust is a webhook of the operator as kube-apiserver calls it: which object holds it, and the
// CAs its caBundle trusts.
type webhookTrust struct {
	what string
	cas  []*x509.Certificate
}

func (w webhookTrust) String() string {
	var names []string
	for _, c := range w.cas {
		names = append(names, fmt.Sprintf("%s (serial %s)", c.Subject.CommonName, c.SerialNumber))
	}
	return fmt.Sprintf("%s trusts %s", w.what, strings.Join(names, ", "))
}

// trusts reports whether w's caBundle holds ca.
func (w webhookTrust) trusts(ca *x509.Certificate) bool {
	for _, c := range w.cas {
		if c.Equal(ca) {
			return true
		}
	}
	return false
}

// widgetWebhooks lists every webhook that calls a Service of the operator's namespace: those of the
// validating and mutating webhook configurations, and the Widget CRD's conversion webhook.
func widgetWebhooks(ctx context.Context, dc dynamic.Interface) []webhookTrust {
	var out []webhookTrust
	add := func(what string, cc admissionregistrationv1.WebhookClientConfig) {
		if cc.Service != nil && cc.Service.Namespace == migrateNamespace {
			out = append(out, webhookTrust{what: what, cas: parseCerts(cc.CABundle)})
		}
	}
	vwcs, err := env.clientset.AdmissionregistrationV1().ValidatingWebhookConfigurations().List(ctx, metav1.ListOptions{})
	Expect(err).NotTo(HaveOccurred())
	for _, w := range vwcs.Items {
		for _, h := range w.Webhooks {
			add(fmt.Sprintf("ValidatingWebhookConfiguration %s (labels %v)", w.Name, w.Labels), h.ClientConfig)
		}
	}
	mwcs, err := env.clientset.AdmissionregistrationV1().MutatingWebhookConfigurations().List(ctx, metav1.ListOptions{})
	Expect(err).NotTo(HaveOccurred())
	for _, w := range mwcs.Items {
		for _, h := range w.Webhooks {
			add(fmt.Sprintf("MutatingWebhookConfiguration %s (labels %v)", w.Name, w.Labels), h.ClientConfig)
		}
	}
	u, err := dc.Resource(crdGVR).Get(ctx, "widgets.widgets.olmv1.io", metav1.GetOptions{})
	Expect(err).NotTo(HaveOccurred())
	crd := &apiextensionsv1.CustomResourceDefinition{}
	Expect(runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, crd)).To(Succeed())
	if c := crd.Spec.Conversion; c != nil && c.Webhook != nil && c.Webhook.ClientConfig != nil && c.Webhook.ClientConfig.Service != nil &&
		c.Webhook.ClientConfig.Service.Namespace == migrateNamespace {
		out = append(out, webhookTrust{what: "conversion webhook of CRD " + crd.Name, cas: parseCerts(c.Webhook.ClientConfig.CABundle)})
	}
	return out
}

// parseCerts parses every PEM certificate of b.
func parseCerts(b []byte) []*x509.Certificate {
	var out []*x509.Certificate
	for len(b) > 0 {
		var block *pem.Block
		if block, b = pem.Decode(b); block == nil {
			break
		}
		if c, err := x509.ParseCertificate(block.Bytes); err == nil {
			out = append(out, c)
		}
	}
	return out
}

// cleanupMigration removes everything the migrate spec made, whatever step it reached, so that the
// specs after it find the cluster as the chart left it: the Widgets first (while the operator still
// serves their conversion), the Operator with deletionPolicy Delete (rukpak removes what it owns; a
// migration that did not finish leaves it Orphan), the Catalog, OLM v0's CRDs (and every OLM v0
// object with them), the cluster-scoped objects either OLM left for the operator's ServiceAccount,
// the two namespaces, and the Widget CRD.
func cleanupMigration(ctx SpecContext, dc dynamic.Interface) {
	By("cleaning up: Widgets, the Operator, the Catalog, OLM v0's CRDs and objects, the namespaces, the Widget CRD")
	// Deleted through v1, the version they are stored in: no conversion needed.
	err := dc.Resource(widgetV1).Namespace(widgetNamespace).DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		fmt.Fprintf(GinkgoWriter, "deleting the Widgets: %v\n", err)
	}
	deleteWidgets(ctx, dc)

	_, err = dc.Resource(operatorGVR).Patch(ctx, widgetOperator, types.MergePatchType, []byte(`{"spec":{"deletionPolicy":"Delete"}}`), metav1.PatchOptions{})
	if err == nil {
		Expect(dc.Resource(operatorGVR).Delete(ctx, widgetOperator, metav1.DeleteOptions{})).To(Succeed())
	} else if !apierrors.IsNotFound(err) {
		Expect(err).NotTo(HaveOccurred())
	}
	Eventually(func(g Gomega) {
		bds, err := dc.Resource(bundleDeploymentGVR).List(ctx, metav1.ListOptions{})
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(bds.Items).To(BeEmpty())
	}).WithContext(ctx).WithTimeout(2 * time.Minute).Should(Succeed())
	if err := dc.Resource(catalogGVR).Delete(ctx, migrateCatalogSource, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		Expect(err).NotTo(HaveOccurred())
	}

	for _, n := range olmV0CRDs {
		if err := dc.Resource(crdGVR).Delete(ctx, n, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			Expect(err).NotTo(HaveOccurred())
		}
	}
	deleteOperatorScoped(ctx)
	for _, ns := range []string{migrateNamespace, migrateCatalogNS} {
		if err := env.clientset.CoreV1().Namespaces().Delete(ctx, ns, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			Expect(err).NotTo(HaveOccurred())
		}
	}
	for _, ns := range []string{migrateNamespace, migrateCatalogNS} {
		waitNamespaceGone(ctx, ns)
	}
	Eventually(func(g Gomega) {
		for _, n := range append([]string{migrateCatalogSource}, olmV0CRDs...) {
			gvr := crdGVR
			if n == migrateCatalogSource {
				gvr = catalogGVR
			}
			_, err := dc.Resource(gvr).Get(ctx, n, metav1.GetOptions{})
			g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "%s %s is still there", gvr.Resource, n)
		}
	}).WithContext(ctx).WithTimeout(2 * time.Minute).Should(Succeed())
	deleteWidgetCRD(ctx, dc)
}

// deleteOperatorScoped deletes the cluster-scoped and kube-system objects left for the operator:
// webhook configurations calling a Service in its namespace, ClusterRoleBindings and kube-system
// RoleBindings with a subject in its namespace, and the ClusterRoles named after the operator that
// they bind.
func deleteOperatorScoped(ctx context.Context) {
	adm := env.clientset.AdmissionregistrationV1()
	vwcs, err := adm.ValidatingWebhookConfigurations().List(ctx, metav1.ListOptions{})
	Expect(err).NotTo(HaveOccurred())
	for _, w := range vwcs.Items {
		for _, h := range w.Webhooks {
			if h.ClientConfig.Service != nil && h.ClientConfig.Service.Namespace == migrateNamespace {
				ignoreNotFound(adm.ValidatingWebhookConfigurations().Delete(ctx, w.Name, metav1.DeleteOptions{}))
				break
			}
		}
	}
	mwcs, err := adm.MutatingWebhookConfigurations().List(ctx, metav1.ListOptions{})
	Expect(err).NotTo(HaveOccurred())
	for _, w := range mwcs.Items {
		for _, h := range w.Webhooks {
			if h.ClientConfig.Service != nil && h.ClientConfig.Service.Namespace == migrateNamespace {
				ignoreNotFound(adm.MutatingWebhookConfigurations().Delete(ctx, w.Name, metav1.DeleteOptions{}))
				break
			}
		}
	}
	rbac := env.clientset.RbacV1()
	crbs, err := rbac.ClusterRoleBindings().List(ctx, metav1.ListOptions{})
	Expect(err).NotTo(HaveOccurred())
	for _, b := range crbs.Items {
		if bindsNamespace(b.Subjects) {
			ignoreNotFound(rbac.ClusterRoleBindings().Delete(ctx, b.Name, metav1.DeleteOptions{}))
			if b.RoleRef.Kind == "ClusterRole" && strings.HasPrefix(b.RoleRef.Name, migrateDeployment) {
				ignoreNotFound(rbac.ClusterRoles().Delete(ctx, b.RoleRef.Name, metav1.DeleteOptions{}))
			}
		}
	}
	rbs, err := rbac.RoleBindings("kube-system").List(ctx, metav1.ListOptions{})
	Expect(err).NotTo(HaveOccurred())
	for _, b := range rbs.Items {
		if bindsNamespace(b.Subjects) {
			ignoreNotFound(rbac.RoleBindings("kube-system").Delete(ctx, b.Name, metav1.DeleteOptions{}))
		}
	}
}

func bindsNamespace(subjects []rbacv1.Subject) bool {
	for _, s := range subjects {
		if s.Kind == "ServiceAccount" && s.Namespace == migrateNamespace {
			return true
		}
	}
	return false
}

func ignoreNotFound(err error) {
	if err != nil && !apierrors.IsNotFound(err) {
		Expect(err).NotTo(HaveOccurred())
	}
}
