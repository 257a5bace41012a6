package suite

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/olmv1/olmv1/e2e/localcluster"
	rukpakv1alpha1 "github.com/olmv1/olmv1/rukpak/api/v1alpha1"
)

// haLeaseNamespace holds the leader election Leases of the replicas the ha specs start.
const haLeaseNamespace = "olmv1-ha"

// haLeaseDuration, haRenewDeadline and haRetryPeriod are passed to the replicas
// (--leader-election-lease-duration, -renew-deadline, -retry-period; the defaults are 15 s, 10 s, 2 s).
const (
	haLeaseDuration = 8 * time.Second
	haRenewDeadline = 6 * time.Second
	haRetryPeriod   = 1 * time.Second
)

// haTakeoverBound is the bound: the lease duration + 5 s. With client-go's leader election a
// standby polls the Lease every RetryPeriod·[1, 2.2] (JitterFactor 1.2); it starts the lease duration
// from when it first saw the leader's last renewal (up to one poll after it) and acquires at its
// first poll after that expires (up to one more poll): at most LeaseDuration + 2 × 2.2 s = 12.4 s here.
const haTakeoverBound = haLeaseDuration + 5*time.Second

// haFailover is one measured leader failover.
type haFailover struct {
	component string
	took      time.Duration
}

var haFailovers []haFailover

// haReplicas stops the suite's own (--leader-elect=false) instance of component for the rest of the
// spec, starts two replicas of it with leader election in haLeaseNamespace (each with overrides(i)),
// and registers a clean-up that kills the replicas and restarts the suite's instance.
func haReplicas(ctx context.Context, component string, overrides func(i int) map[string]string) []*localcluster.Controller {
	own := env.environment.Controller(component)
	Expect(own).NotTo(BeNil(), "the suite's %s", component)
	var reps []*localcluster.Controller
	DeferCleanup(func(ctx SpecContext) {
		for _, r := range reps {
			Expect(r.Kill()).To(Succeed())
		}
		Expect(own.EnsureRunning(ctx, time.Minute)).To(Succeed(), "restarting the suite's %s", component)
	})
	By("stopping the suite's " + component + " (--leader-elect=false) and starting two replicas with --leader-elect=true")
	Expect(own.Kill()).To(Succeed())
	for i := 1; i <= 2; i++ {
		o := map[string]string{"leader-election-namespace": haLeaseNamespace,
			"leader-election-lease-duration": haLeaseDuration.String(), "leader-election-renew-deadline": haRenewDeadline.String(),
			"leader-election-retry-period": haRetryPeriod.String()}
		for k, v := range overrides(i) {
			o[k] = v
		}
		r, err := localcluster.StartReplica(own, fmt.Sprintf("%s-ha-%d", component, i), o)
		Expect(err).NotTo(HaveOccurred())
		reps = append(reps, r)
	}
	Expect(localcluster.WaitControllersReady(ctx, reps, 2*time.Minute)).To(Succeed())
	return reps
}

func haLeaseName(component string) string { return component + ".olmv1.operatorframework.io" }

// haHolder returns the Lease's holderIdentity ("" when there is none yet).
func haHolder(ctx context.Context, component string) (string, error) {
	l, err := env.clientset.CoordinationV1().Leases(haLeaseNamespace).Get(ctx, haLeaseName(component), metav1.GetOptions{})
	if err != nil {
		return "", err
	}
	if l.Spec.HolderIdentity == nil {
		return "", nil
	}
	return *l.Spec.HolderIdentity, nil
}

// haAcquired reports whether the replica logged that it acquired component's Lease.
func haAcquired(r *localcluster.Controller, component string) bool {
	return logAcquiredLease(r.Log, haLeaseNamespace+"/"+haLeaseName(component))
}

// logAcquiredLease reports whether the log at path says its process acquired the Lease lock
// ("namespace/name"). Identities are <hostname>_<uuid> and every process here shares the hostname,
// so the log tells which process leads.
func logAcquiredLease(path, lock string) bool {
	b, err := os.ReadFile(path)
	if err != nil {
		return false
	}
	for _, line := range strings.Split(string(b), "\n") {
		// klog text ("successfully acquired lease ns/name") or, as the controllers log it,
		// JSON ({"msg":"Successfully acquired lease","lock":"ns/name"}).
		if strings.Contains(strings.ToLower(line), "successfully acquired lease") && strings.Contains(line, lock) {
			return true
		}
	}
	return false
}

// haLeader waits until exactly one replica leads and the Lease names a holder; it returns the
// leader's index and the holder identity.
func haLeader(ctx context.Context, component string, reps []*localcluster.Controller) (int, string) {
	leader, holder := -1, ""
	Eventually(func(g Gomega) {
		var leaders []int
		for i, r := range reps {
			if !r.Exited() && haAcquired(r, component) {
				leaders = append(leaders, i)
			}
		}
		g.Expect(leaders).To(HaveLen(1), "replicas that logged acquiring the %s Lease", component)
		h, err := haHolder(ctx, component)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(h).NotTo(BeEmpty())
		leader, holder = leaders[0], h
	}).WithContext(ctx).WithTimeout(haLeaseDuration + 30*time.Second).WithPolling(100 * time.Millisecond).Should(Succeed())
	return leader, holder
}

// haTakeover is a killed leader's Lease to watch: its old holder and the replica expected to take it.
type haTakeover struct {
	component string
	old       string
	survivor  *localcluster.Controller
}

// haMeasureTakeovers polls the Leases every 100 ms from killedAt (all in one loop, so that one
// takeover's wait does not delay the measurement of another) until each holder is no longer its old
// one, checks that the surviving replica acquired it and that it happened within haTakeoverBound,
// and records the times.
func haMeasureTakeovers(ctx context.Context, killedAt time.Time, ts ...haTakeover) {
	took := map[string]time.Duration{}
	Eventually(func(g Gomega) {
		for _, t := range ts {
			if _, done := took[t.component]; done {
				continue
			}
			h, err := haHolder(ctx, t.component)
			g.Expect(err).NotTo(HaveOccurred())
			if h != "" && h != t.old {
				took[t.component] = time.Since(killedAt)
			}
		}
		g.Expect(took).To(HaveLen(len(ts)), func() string {
			return fmt.Sprintf("Leases taken over so far: %v; %s", took, haWaiting(ctx, ts, took))
		})
	}).WithContext(ctx).WithTimeout(haTakeoverBound + 10*time.Second).WithPolling(100 * time.Millisecond).Should(Succeed())
	for _, t := range ts {
		Expect(t.survivor.Exited()).To(BeFalse(), "the standby %s is running", t.survivor.Name)
		Eventually(func() bool { return haAcquired(t.survivor, t.component) }).WithContext(ctx).WithTimeout(5*time.Second).
			Should(BeTrue(), "the standby %s (log %s) holds the Lease", t.survivor.Name, t.survivor.Log)
		d := took[t.component]
		msg := fmt.Sprintf("ha: %s failover %.2fs (SIGKILL of the leader to a new holderIdentity; lease duration %v, within lease duration + 5 s: %v)",
			t.component, d.Seconds(), haLeaseDuration, d <= haLeaseDuration+5*time.Second)
		fmt.Fprintln(GinkgoWriter, msg)
		AddReportEntry("ha "+t.component+" failover", d.String())
		haFailovers = append(haFailovers, haFailover{component: t.component, took: d})
		Expect(d).To(BeNumerically("<=", haTakeoverBound), msg)
	}
}

// haWaiting describes the takeovers not seen yet, for the failure message: the Lease as it is, whether
// the standby still runs, and the end of its log.
func haWaiting(ctx context.Context, ts []haTakeover, took map[string]time.Duration) string {
	var parts []string
	for _, t := range ts {
		if _, done := took[t.component]; done {
			continue
		}
		lease := "unreadable"
		if l, err := env.clientset.CoordinationV1().Leases(haLeaseNamespace).Get(ctx, haLeaseName(t.component), metav1.GetOptions{}); err != nil {
			lease = err.Error()
		} else {
			h, renewed := "", "never"
			if l.Spec.HolderIdentity != nil {
				h = *l.Spec.HolderIdentity
			}
			if l.Spec.RenewTime != nil {
				renewed = time.Since(l.Spec.RenewTime.Time).Round(100*time.Millisecond).String() + " ago"
			}
			lease = fmt.Sprintf("holder %q (killed leader %q), renewed %s", h, t.old, renewed)
		}
		parts = append(parts, fmt.Sprintf("%s: Lease %s; standby %s exited=%v, its log ends:\n%s",
			t.component, lease, t.survivor.Name, t.survivor.Exited(), t.survivor.LogTail(3000)))
	}
	return strings.Join(parts, "\n")
}

// haRevisions checks that a BundleDeployment is Installed and Healthy for its generation at revision
// 1 with one history entry and exactly one release Secret, deployed (none pending).
func haRevisions(ctx context.Context, c client.Client, name string) error {
	bd := &rukpakv1alpha1.BundleDeployment{}
	if err := c.Get(ctx, client.ObjectKey{Name: name}, bd); err != nil {
		return err
	}
	for _, typ := range []string{rukpakv1alpha1.TypeInstalled, rukpakv1alpha1.TypeHealthy} {
		cond := meta.FindStatusCondition(bd.Status.Conditions, typ)
		if cond == nil || cond.Status != metav1.ConditionTrue || cond.ObservedGeneration != bd.Generation {
			return fmt.Errorf("%s: %v", typ, cond)
		}
	}
	if bd.Status.InstalledRevision != 1 || len(bd.Status.History) != 1 {
		return fmt.Errorf("installedRevision %d, %d history entries; want 1 and 1", bd.Status.InstalledRevision, len(bd.Status.History))
	}
	secrets, err := env.clientset.CoreV1().Secrets(rukpakNamespace).List(ctx, metav1.ListOptions{LabelSelector: "owner=helm,name=" + name})
	if err != nil {
		return err
	}
	var states []string
	for _, s := range secrets.Items {
		states = append(states, "v"+s.Labels["version"]+"="+s.Labels["status"])
	}
	if len(states) != 1 || states[0] != "v1=deployed" {
		return fmt.Errorf("release Secrets %v, want [v1=deployed]", states)
	}
	return nil
}

// haNoConflicts checks that no replica's log mentions an ObjectConflict.
func haNoConflicts(reps []*localcluster.Controller) {
	for _, r := range reps {
		b, err := os.ReadFile(r.Log)
		Expect(err).NotTo(HaveOccurred())
		Expect(string(b)).NotTo(ContainSubstring(rukpakv1alpha1.ReasonObjectConflict), "log %s", r.Log)
	}
}

// haSummary prints p50 and max of the failovers measured so far per component.
func haSummary() {
	by := map[string][]time.Duration{}
	for _, f := range haFailovers {
		by[f.component] = append(by[f.component], f.took)
	}
	names := make([]string, 0, len(by))
	for n := range by {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		ds := by[n]
		sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
		p50 := ds[(len(ds)+1)/2-1]
		fmt.Fprintf(GinkgoWriter, "ha: %s failover over %d kill(s): p50 %.2fs, max %.2fs\n", n, len(ds), p50.Seconds(), ds[len(ds)-1].Seconds())
	}
}

// haInstallState describes the plain BundleDeployment bdName (its conditions, revision and release
// Secrets) and the revision of Operator opName's BundleDeployment, for the log of the kill.
func haInstallState(ctx context.Context, c client.Client, bdName, opName string) string {
	bd := &rukpakv1alpha1.BundleDeployment{}
	if err := c.Get(ctx, client.ObjectKey{Name: bdName}, bd); err != nil {
		return err.Error()
	}
	var parts []string
	for _, cond := range bd.Status.Conditions {
		parts = append(parts, cond.Type+"="+string(cond.Status)+"/"+cond.Reason)
	}
	var releases []string
	if l, err := env.clientset.CoreV1().Secrets(rukpakNamespace).List(ctx, metav1.ListOptions{LabelSelector: "owner=helm,name=" + bdName}); err == nil {
		for _, s := range l.Items {
			releases = append(releases, "v"+s.Labels["version"]+"="+s.Labels["status"])
		}
	}
	opBD := &rukpakv1alpha1.BundleDeployment{}
	opState := "no BundleDeployment yet"
	if err := c.Get(ctx, client.ObjectKey{Name: opName}, opBD); err == nil {
		opState = fmt.Sprintf("its BundleDeployment at rev %d", opBD.Status.InstalledRevision)
	}
	return fmt.Sprintf("%s: [%s], rev %d, releases %v; Operator: %s", bdName, strings.Join(parts, " "), bd.Status.InstalledRevision, releases, opState)
}

var _ = Describe("leader failover", Label("ha"), Ordered, func() {
	var (
		dc dynamic.Interface
		c  client.Client
	)

	BeforeAll(func(ctx SpecContext) {
		var err error
		dc, err = dynamic.NewForConfig(env.cfg)
		Expect(err).NotTo(HaveOccurred())
		c = newClient(env.cfg)
		for _, ns := range []string{haLeaseNamespace, catalogdNamespace} {
			_, err = env.clientset.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
			if !apierrors.IsAlreadyExists(err) {
				Expect(err).NotTo(HaveOccurred())
			}
		}
	})
	AfterAll(haSummary)

	It("rukpak and operator-controller: the standby takes over a SIGKILLed leader's Lease and finishes its installs as one revision", func(ctx SpecContext) {
		const catalogName, opName, opNS, bdName = "ha-catalog", "ha-example-operator", "ha-example-operator", "ha-plain"
		catalogRefs, _ := pushExampleOperator(ctx, "ha-example-index")

		By("creating a Catalog on example-operator's index 0.1.0 (served by the suite's catalogd)")
		catalogs := dc.Resource(catalogGVR)
		_, err := catalogs.Create(ctx, &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "catalogd.operatorframework.io/v1alpha1", "kind": "Catalog",
			"metadata": map[string]any{"name": catalogName, "labels": map[string]any{"e2e": "ha"}},
			"spec":     map[string]any{"source": map[string]any{"type": "Image", "image": map[string]any{"ref": catalogRefs["0.1.0"]}}},
		}}, metav1.CreateOptions{})
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(func(ctx SpecContext) { _ = catalogs.Delete(ctx, catalogName, metav1.DeleteOptions{}) })
		waitCondition(ctx, c, catalogNamed(catalogName), "Serving", "True", 2*time.Minute, anyGeneration())

		ns := createNamespace(ctx, "ha-plain-")
		ref := bdPushPlainBundle(ctx, "ha", map[string]string{
			"settings.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\ndata:\n  mode: ha\n",
			"web.yaml":      bdWebDeployment,
		})

		// Registered before the replicas' clean-ups, so it runs after them: the suite's controllers,
		// running again, uninstall.
		DeferCleanup(func(ctx SpecContext) {
			_ = dc.Resource(operatorGVR).Delete(ctx, opName, metav1.DeleteOptions{})
			_ = c.Delete(ctx, &rukpakv1alpha1.BundleDeployment{ObjectMeta: metav1.ObjectMeta{Name: bdName}})
			for _, n := range []string{opName, bdName} {
				Eventually(func() bool {
					return apierrors.IsNotFound(c.Get(ctx, client.ObjectKey{Name: n}, &rukpakv1alpha1.BundleDeployment{}))
				}).WithContext(ctx).WithTimeout(2*time.Minute).Should(BeTrue(), "BundleDeployment %s is removed", n)
			}
		})

		cachedir := func(i int) map[string]string {
			// Each replica has its own unpack cache, as each Pod has its own emptyDir.
			return map[string]string{"cache-dir": filepath.Join(GinkgoT().TempDir(), "cache-"+strconv.Itoa(i))}
		}
		rukpaks := haReplicas(ctx, "rukpak", cachedir)
		operators := haReplicas(ctx, "operator-controller", func(int) map[string]string { return nil })
		rLeader, rHolder := haLeader(ctx, "rukpak", rukpaks)
		oLeader, oHolder := haLeader(ctx, "operator-controller", operators)
		fmt.Fprintf(GinkgoWriter, "ha: rukpak leader %s (pid %d, %s), operator-controller leader %s (pid %d, %s)\n",
			rukpaks[rLeader].Name, rukpaks[rLeader].PID, rHolder, operators[oLeader].Name, operators[oLeader].PID, oHolder)

		By("creating an Operator and a plain BundleDeployment, and SIGKILLing both leaders while they work")
		_, err = dc.Resource(operatorGVR).Create(ctx, &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "operators.operatorframework.io/v1alpha1", "kind": "Operator",
			"metadata": map[string]any{"name": opName},
			"spec": map[string]any{"packageName": "example-operator", "version": "0.1.0", "installNamespace": opNS,
				"catalogSelector": map[string]any{"matchLabels": map[string]any{"e2e": "ha"}}},
		}}, metav1.CreateOptions{})
		Expect(err).NotTo(HaveOccurred())
		Expect(c.Create(ctx, &rukpakv1alpha1.BundleDeployment{
			ObjectMeta: metav1.ObjectMeta{Name: bdName},
			Spec: rukpakv1alpha1.BundleDeploymentSpec{
				ProvisionerClassName: rukpakv1alpha1.ProvisionerPlain,
				InstallNamespace:     ns,
				Source:               bdImageSource(ref),
			},
		})).To(Succeed())
		// Kill when rukpak's leader has recorded the plain bundle's first release (the install is
		// under way: it is pending until the objects are applied), at most 3 s after the create.
		start := time.Now()
		for time.Since(start) < 3*time.Second {
			l, err := env.clientset.CoreV1().Secrets(rukpakNamespace).List(ctx, metav1.ListOptions{LabelSelector: "owner=helm,name=" + bdName})
			if err == nil && len(l.Items) > 0 {
				break
			}
			time.Sleep(10 * time.Millisecond)
		}
		saw := haInstallState(ctx, c, bdName, opName)
		killedAt := time.Now()
		Expect(rukpaks[rLeader].Kill()).To(Succeed())
		Expect(operators[oLeader].Kill()).To(Succeed())
		fmt.Fprintf(GinkgoWriter, "ha: killed both leaders %v after the creates; saw %s\n", killedAt.Sub(start), saw)

		By("measuring the takeovers")
		haMeasureTakeovers(ctx, killedAt,
			haTakeover{component: "rukpak", old: rHolder, survivor: rukpaks[1-rLeader]},
			haTakeover{component: "operator-controller", old: oHolder, survivor: operators[1-oLeader]})

		By("the new leaders finish the work: one revision each, no conflicts")
		Eventually(func(ctx context.Context) error { return haRevisions(ctx, c, bdName) }).WithContext(ctx).
			WithTimeout(time.Minute).WithPolling(250 * time.Millisecond).Should(Succeed())
		op := operatorNamed(opName)
		waitCondition(ctx, c, op, "Installed", "True", time.Minute, andAlso(func(g Gomega) {
			g.Expect(nestedString(op.Object, "status", "installedBundle", "version")).To(Equal("0.1.0"))
		}))
		Eventually(func(ctx context.Context) error { return haRevisions(ctx, c, opName) }).WithContext(ctx).
			WithTimeout(time.Minute).WithPolling(250 * time.Millisecond).Should(Succeed())

		bds := &rukpakv1alpha1.BundleDeploymentList{}
		Expect(c.List(ctx, bds)).To(Succeed())
		var owned []string
		for _, bd := range bds.Items {
			for _, o := range bd.OwnerReferences {
				if o.Kind == "Operator" && o.Name == opName {
					owned = append(owned, bd.Name)
				}
			}
		}
		Expect(owned).To(Equal([]string{opName}), "one BundleDeployment per Operator")
		haNoConflicts(append(append([]*localcluster.Controller{}, rukpaks...), operators...))
	})

	It("catalogd: the standby takes over a SIGKILLed leader's Lease, finishes the unpack and serves the content", func(ctx SpecContext) {
		const catalogName = "ha-catalogd"
		catalogRefs, _ := pushExampleOperator(ctx, "ha-catalogd-index")
		addrs := map[int]string{}
		reps := haReplicas(ctx, "catalogd", func(i int) map[string]string {
			port, err := localcluster.FreePort()
			Expect(err).NotTo(HaveOccurred())
			addrs[i] = net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
			dir := GinkgoT().TempDir()
			// Only the suite's catalogd backs the CatalogMetadata APIService: the replicas serve
			// content only, each from its own store.
			return map[string]string{
				"http-bind-address": addrs[i], "storage-dir": filepath.Join(dir, "storage"), "cache-dir": filepath.Join(dir, "cache"),
				"metadata-bind-address": "0", "metadata-apiservice": "none",
			}
		})
		catalogs := dc.Resource(catalogGVR)
		// Registered after the replicas' clean-up, so it runs before it: a replica removes the finalizer.
		DeferCleanup(func(ctx SpecContext) {
			_ = catalogs.Delete(ctx, catalogName, metav1.DeleteOptions{})
			Eventually(func() bool {
				_, err := catalogs.Get(ctx, catalogName, metav1.GetOptions{})
				return apierrors.IsNotFound(err)
			}).WithContext(ctx).WithTimeout(time.Minute).Should(BeTrue(), "catalogd removes its finalizer")
		})
		leader, holder := haLeader(ctx, "catalogd", reps)
		survivor := 1 - leader

		By("creating a Catalog and SIGKILLing catalogd's leader during its unpack")
		_, err := catalogs.Create(ctx, &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "catalogd.operatorframework.io/v1alpha1", "kind": "Catalog",
			"metadata": map[string]any{"name": catalogName},
			"spec":     map[string]any{"source": map[string]any{"type": "Image", "image": map[string]any{"ref": catalogRefs["0.1.0"]}}},
		}}, metav1.CreateOptions{})
		Expect(err).NotTo(HaveOccurred())
		time.Sleep(100 * time.Millisecond)
		killedAt := time.Now()
		Expect(reps[leader].Kill()).To(Succeed())
		haMeasureTakeovers(ctx, killedAt, haTakeover{component: "catalogd", old: holder, survivor: reps[survivor]})

		var hash string
		catalog := catalogNamed(catalogName)
		waitCondition(ctx, c, catalog, "Serving", "True", time.Minute, andAlso(func(g Gomega) {
			unpacked := findCondition(catalog, "Unpacked")
			g.Expect(unpacked).To(HaveKeyWithValue("status", "True"), "Unpacked")
			g.Expect(unpacked["observedGeneration"]).To(BeEquivalentTo(catalog.GetGeneration()))
			hash = nestedString(catalog.Object, "status", "contentHash")
			g.Expect(hash).NotTo(BeEmpty())
		}))

		By("restarting the killed replica, now a standby, and reading the content from both")
		Expect(reps[leader].Restart(ctx, time.Minute)).To(Succeed())
		for _, i := range []int{survivor, leader} {
			url := "https://" + addrs[i+1] + "/catalogs/" + catalogName + "/all.json"
			Eventually(func(g Gomega) {
				code, all, err := chaosGet(ctx, url)
				g.Expect(err).NotTo(HaveOccurred())
				g.Expect(code).To(Equal(200), "GET %s", url)
				g.Expect(sha256Hex(all)).To(Equal(hash), "GET %s", url)
			}).WithContext(ctx).WithTimeout(time.Minute).WithPolling(250 * time.Millisecond).Should(Succeed())
		}
		h, err := haHolder(ctx, "catalogd")
		Expect(err).NotTo(HaveOccurred())
		Expect(haAcquired(reps[leader], "catalogd")).To(BeFalse(), "the restarted replica stays a standby (holder %s)", h)
	})
})
