package suite

import (
	"context"
	"fmt"
	"maps"
	"net/http"
	"os"
	"slices"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	helmchart "helm.sh/helm/v3/pkg/chart"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"

	"github.com/olmv1/olmv1/e2e/chart"
	"github.com/olmv1/olmv1/e2e/chart/images"
)

// expectChartComponentsServeAndReload runs each component as the chart's Deployment configures it
// and checks its endpoints, RBAC and Lease, then rotates the certificates and expects every endpoint
// to serve the new ones without a restart.
func expectChartComponentsServeAndReload(ctx SpecContext, hc *chart.Client, ch *helmchart.Chart, dc dynamic.Interface, vals map[string]any, caBundle []byte) {
	// The chart's pods never run on kwok nodes: run the binaries here instead, exactly as the
	// Deployments configure them (args, Secret and emptyDir volumes), authenticated as the chart's
	// ServiceAccounts so that its RBAC is what they get, listening on 127.0.0.1 only.
	skipIfChartControllersWouldCompete(ctx, dc)
	By("creating a scraper ServiceAccount bound to the chart's metrics-reader ClusterRole")
	token := scraperToken(ctx)
	var procs []*chartProcess
	DeferCleanup(func() {
		for _, p := range procs {
			p.stop()
		}
	})
	for _, name := range images.Names {
		p := startChartComponent(ctx, name)
		procs = append(procs, p)
	}
	for _, p := range procs {
		By("waiting for " + p.name + " to be ready (log " + p.log + ")")
		Eventually(p.ready).WithContext(ctx).WithTimeout(2*time.Minute).WithPolling(250*time.Millisecond).Should(Succeed(), "log %s", p.log)
	}
	for _, p := range procs {
		ca := secretData(ctx, p.name+"-tls")["ca.crt"]
		By(p.name + ": metrics over HTTPS, verified against the chart's CA, behind TokenReview/SubjectAccessReview")
		code, body := p.get(ca, p.addrs["--metrics-bind-address"], "/metrics", token)
		Expect(code).To(Equal(http.StatusOK), "%s", body)
		Expect(body).To(ContainSubstring("certwatcher_read_certificate_total"))
		code, _ = p.get(ca, p.addrs["--metrics-bind-address"], "/metrics", "")
		Expect(code).To(Equal(http.StatusUnauthorized))
		if p.name == "catalogd" {
			code, body = p.get(ca, p.addrs["--http-bind-address"], "/catalogs/none/all.json", "")
			Expect(code).To(Equal(http.StatusNotFound), "content endpoint: %s", body)
			Expect(p.servedCert(ca, p.addrs["--metadata-bind-address"])).NotTo(BeNil(), "CatalogMetadata API")
		}
		By(p.name + ": holds its leader election Lease")
		Eventually(func(g Gomega) {
			l, err := env.clientset.CoordinationV1().Leases(chartNamespace).Get(ctx, p.name+".olmv1.operatorframework.io", metav1.GetOptions{})
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(l.Spec.HolderIdentity).NotTo(BeNil())
		}).WithContext(ctx).WithTimeout(time.Minute).Should(Succeed())
		Expect(p.forbidden()).To(BeEmpty(), "RBAC denials in %s", p.log)
	}

	By("rukpak renews a serving certificate close to expiry (selfSigned: --platform-serving-secret)")
	expectRukpakRenewsServingCertificate(ctx, procs[slices.IndexFunc(procs, func(p *chartProcess) bool { return p.name == "operator-controller" })])
	for _, p := range procs {
		Expect(p.forbidden()).To(BeEmpty(), "RBAC denials in %s", p.log)
	}

	By("rotating the certificates (tls.selfSigned.rotate) and updating the mounted files as kubelet does")
	rotated := map[string]any{}
	for k, v := range vals {
		rotated[k] = v
	}
	rotated["tls"] = map[string]any{"mode": "selfSigned", "selfSigned": map[string]any{"rotate": true}}
	_, err := hc.Install(ctx, ch, chartRelease, rotated, 2*time.Minute)
	Expect(err).NotTo(HaveOccurred())
	as, err := dc.Resource(apiServiceGVR).Get(ctx, apiServiceName, metav1.GetOptions{})
	Expect(err).NotTo(HaveOccurred())
	newCA := apiServiceCABundle(as)
	Expect(newCA).NotTo(Equal(caBundle))
	Expect(string(newCA)).To(ContainSubstring(string(caBundle)), "the replaced CA stays in the caBundle next to the new one")
	for _, name := range images.Names {
		verifyServingSecret(ctx, newCA, name)
	}
	for _, p := range procs {
		p.refreshSecretVolumes(ctx)
	}
	By("every endpoint serves the new certificate without a restart")
	for _, p := range procs {
		endpoints := []string{"--metrics-bind-address"}
		if p.name == "catalogd" {
			endpoints = append(endpoints, "--http-bind-address", "--metadata-bind-address")
		}
		for _, flag := range endpoints {
			Eventually(func() error {
				_, err := p.servedCertErr(newCA, p.addrs[flag])
				return err
			}).WithContext(ctx).WithTimeout(2*time.Minute).WithPolling(250*time.Millisecond).Should(Succeed(), "%s %s", p.name, flag)
		}
		Expect(p.exited()).To(BeFalse(), "%s still runs (not restarted)", p.name)
	}
}

// expectChartReplicasFailOver upgrades the release to two replicas of every component and expects
// them spread, behind a PodDisruptionBudget, with a standby that takes over a SIGKILLed leader.
func expectChartReplicasFailOver(ctx SpecContext, hc *chart.Client, ch *helmchart.Chart, dc dynamic.Interface, vals map[string]any) {
	skipIfChartControllersWouldCompete(ctx, dc)
	two := map[string]any{}
	for k, v := range vals {
		two[k] = v
	}
	// The ha spec's lease timings, through the chart's extraArgs, so that a failover on the
	// loaded CI machine is measured against the same margins.
	leaseArgs := []any{"--leader-election-lease-duration=" + haLeaseDuration.String(),
		"--leader-election-renew-deadline=" + haRenewDeadline.String(), "--leader-election-retry-period=" + haRetryPeriod.String()}
	for _, key := range []string{"catalogd", "rukpak", "operatorController"} {
		c := map[string]any{"replicas": 2, "extraArgs": leaseArgs}
		if m, ok := vals[key].(map[string]any); ok {
			for k, v := range m {
				c[k] = v
			}
		}
		two[key] = c
	}
	_, err := hc.Install(ctx, ch, chartRelease, two, 2*time.Minute)
	Expect(err).NotTo(HaveOccurred())

	for _, name := range images.Names {
		By(name + ": two ready pods of the new template, spread over nodes, behind a PodDisruptionBudget")
		Eventually(func(g Gomega) {
			d, err := env.clientset.AppsV1().Deployments(chartNamespace).Get(ctx, name, metav1.GetOptions{})
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(d.Status.ObservedGeneration).To(Equal(d.Generation))
			g.Expect(deploymentAvailable(d)).To(BeTrue(), "conditions %v", d.Status.Conditions)
			g.Expect([]int32{d.Status.Replicas, d.Status.UpdatedReplicas, d.Status.ReadyReplicas}).To(Equal([]int32{2, 2, 2}), "replicas, updated, ready")
			spread := d.Spec.Template.Spec.TopologySpreadConstraints
			g.Expect(spread).To(HaveLen(1))
			g.Expect(spread[0].TopologyKey).To(Equal("kubernetes.io/hostname"))
			g.Expect(spread[0].WhenUnsatisfiable).To(Equal(corev1.ScheduleAnyway))
		}).WithContext(ctx).WithTimeout(2 * time.Minute).WithPolling(250 * time.Millisecond).Should(Succeed())
		Eventually(func(g Gomega) {
			pdb, err := env.clientset.PolicyV1().PodDisruptionBudgets(chartNamespace).Get(ctx, name, metav1.GetOptions{})
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(pdb.Spec.MinAvailable.IntValue()).To(Equal(1))
			// Counted by kube-controller-manager's disruption controller from the pods the selector matches.
			g.Expect(pdb.Status.ObservedGeneration).To(Equal(pdb.Generation))
			g.Expect([]int32{pdb.Status.ExpectedPods, pdb.Status.CurrentHealthy, pdb.Status.DisruptionsAllowed}).To(Equal([]int32{2, 2, 1}),
				"expected pods, healthy, disruptions allowed")
		}).WithContext(ctx).WithTimeout(2 * time.Minute).WithPolling(250 * time.Millisecond).Should(Succeed())
		pods, err := env.clientset.CoreV1().Pods(chartNamespace).List(ctx, metav1.ListOptions{LabelSelector: "app.kubernetes.io/name=" + name})
		Expect(err).NotTo(HaveOccurred())
		nodes := map[string]bool{}
		for _, p := range pods.Items {
			if p.DeletionTimestamp == nil {
				nodes[p.Spec.NodeName] = true
			}
		}
		fmt.Fprintf(GinkgoWriter, "chart: %s pods on nodes %v\n", name, slices.Sorted(maps.Keys(nodes)))
	}

	if os.Getenv("E2E_CHART_REAL_CLUSTER") == "1" {
		// Real pods: they hold the Leases themselves; the leader pod is killed instead of a process.
		chartPodFailovers(ctx)
		return
	}

	By("running two processes of each component as its Deployment configures them (lease " + haLeaseDuration.String() + " via extraArgs)")
	replicas := map[string][]*chartProcess{}
	DeferCleanup(func() {
		for _, ps := range replicas {
			for _, p := range ps {
				p.stop()
			}
		}
	})
	for _, name := range images.Names {
		replicas[name] = []*chartProcess{startChartComponent(ctx, name), startChartComponent(ctx, name)}
	}
	for _, name := range images.Names {
		for _, p := range replicas[name] {
			By("waiting for " + p.name + " to be ready (log " + p.log + "): a standby is Ready too")
			Eventually(p.ready).WithContext(ctx).WithTimeout(2*time.Minute).WithPolling(250*time.Millisecond).Should(Succeed(), "log %s", p.log)
		}
	}
	leaders := map[string]int{}
	holders := map[string]string{}
	for _, name := range images.Names {
		leaders[name], holders[name] = chartLeader(ctx, name, replicas[name])
	}
	By("SIGKILLing every leader at once")
	killedAt := time.Now()
	for _, name := range images.Names {
		Expect(replicas[name][leaders[name]].cmd.Process.Kill()).To(Succeed())
	}
	took := awaitLeaseTakeovers(ctx, holders, killedAt, nil)
	for _, name := range images.Names {
		standby := replicas[name][1-leaders[name]]
		Expect(standby.exited()).To(BeFalse())
		Eventually(func() bool { return chartAcquired(standby) }).WithContext(ctx).WithTimeout(5*time.Second).
			Should(BeTrue(), "the standby %s (log %s) holds the Lease", name, standby.log)
		fmt.Fprintf(GinkgoWriter, "chart: %s failover %.2fs (SIGKILL to a new holderIdentity, lease %v)\n", name, took[name].Seconds(), haLeaseDuration)
		AddReportEntry("chart "+name+" failover", took[name].String())
		Expect(took[name]).To(BeNumerically("<=", chartTakeoverBound))
		Expect(standby.ready()).To(Succeed())
		Expect(standby.forbidden()).To(BeEmpty(), "RBAC denials in %s", standby.log)
	}
}

// awaitLeaseTakeovers waits until every component's Lease is held by someone other than its holder in
// holders (the one killed at killedAt), and returns how long each took. check, when set, is asked
// about each new holder (name, holder) as it appears.
func awaitLeaseTakeovers(ctx context.Context, holders map[string]string, killedAt time.Time, check func(g Gomega, name, holder string)) map[string]time.Duration {
	took := map[string]time.Duration{}
	Eventually(func(g Gomega) {
		for _, name := range images.Names {
			if _, done := took[name]; done {
				continue
			}
			if h := chartLeaseHolder(ctx, name); h != "" && h != holders[name] {
				if check != nil {
					check(g, name, h)
				}
				took[name] = time.Since(killedAt)
			}
		}
		g.Expect(took).To(HaveLen(len(images.Names)), "Leases taken over so far: %v", took)
	}).WithContext(ctx).WithTimeout(chartTakeoverBound + 10*time.Second).WithPolling(100 * time.Millisecond).Should(Succeed())
	return took
}
