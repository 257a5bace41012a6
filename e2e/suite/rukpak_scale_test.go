package suite

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	rukpakv1alpha1 "github.com/olmv1/olmv1/rukpak/api/v1alpha1"
)

// The rukpak scale measurement: rukpak's RSS and CPU with 1, 10 and 100 BundleDeployments installed
// on the local control plane. It is a measurement that takes a few minutes, so the default label
// filter of `make test-e2e` leaves it out; run it with:
//
//	make test-e2e E2E_LABELS=rukpak-scale
//
// `make bench` measures the same as benchmark metrics (e2e/bench, BenchmarkBundleDeploymentsScale).
var _ = Describe("rukpak at scale", Label("rukpak-scale"), Ordered, func() {
	It("stays small and idle with 1, 10 and 100 BundleDeployments", func(ctx SpecContext) {
		pid := 0
		for _, c := range env.controllers {
			if c.Name == "rukpak" {
				pid = c.PID
			}
		}
		Expect(pid).NotTo(BeZero())
		c := newClient(env.cfg)

		ref := bdPushPlainBundle(ctx, "scale", map[string]string{
			"settings.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\ndata:\n  mode: one\n",
			"sa.yaml":       "apiVersion: v1\nkind: ServiceAccount\nmetadata:\n  name: web\n",
			"web.yaml":      bdWebDeployment,
		})
		report := []string{fmt.Sprintf("%-6s %-10s %-12s %s", "BDs", "RSS (MB)", "idle CPU (%)", "install time")}
		rss, _ := procStats(pid)
		report = append(report, fmt.Sprintf("%-6d %-10.1f %-12s %s", 0, rss, "-", "-"))
		created := 0
		for _, n := range []int{1, 10, 100} {
			start := time.Now()
			for ; created < n; created++ {
				name := fmt.Sprintf("scale-%03d", created)
				ns := createNamespace(ctx, name+"-")
				bd := &rukpakv1alpha1.BundleDeployment{
					ObjectMeta: metav1.ObjectMeta{Name: name},
					Spec: rukpakv1alpha1.BundleDeploymentSpec{
						ProvisionerClassName: rukpakv1alpha1.ProvisionerPlain, InstallNamespace: ns, Source: bdImageSource(ref),
					},
				}
				Expect(c.Create(ctx, bd)).To(Succeed())
				DeferCleanup(func(ctx context.Context) { _ = c.Delete(ctx, bd) })
			}
			Eventually(func(g Gomega) {
				list := &rukpakv1alpha1.BundleDeploymentList{}
				g.Expect(c.List(ctx, list)).To(Succeed())
				healthy := 0
				for _, bd := range list.Items {
					if strings.HasPrefix(bd.Name, "scale-") && meta.IsStatusConditionTrue(bd.Status.Conditions, rukpakv1alpha1.TypeHealthy) {
						healthy++
					}
				}
				g.Expect(healthy).To(Equal(n))
			}).WithContext(ctx).WithTimeout(10 * time.Minute).WithPolling(2 * time.Second).Should(Succeed())
			took := time.Since(start)
			time.Sleep(10 * time.Second) // let start-up work settle
			_, cpu0 := procStats(pid)
			const window = 30 * time.Second
			time.Sleep(window)
			rss, cpu1 := procStats(pid)
			report = append(report, fmt.Sprintf("%-6d %-10.1f %-12.2f %s", n, rss, 100*(cpu1-cpu0)/window.Seconds(), took.Round(time.Second)))
		}
		out := strings.Join(report, "\n")
		AddReportEntry("rukpak scale", out)
		fmt.Fprintln(GinkgoWriter, out)
	})
})

// procStats returns the RSS in MB and the CPU seconds (user+system) a process used so far.
func procStats(pid int) (rssMB, cpuSeconds float64) {
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	Expect(err).NotTo(HaveOccurred())
	for _, line := range strings.Split(string(status), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "VmRSS:" {
			kb, _ := strconv.ParseFloat(f[1], 64)
			rssMB = kb / 1024
		}
	}
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	Expect(err).NotTo(HaveOccurred())
	// Fields after the command name (which may hold spaces) start after the last ')'.
	f := strings.Fields(string(stat)[strings.LastIndexByte(string(stat), ')')+2:])
	utime, _ := strconv.ParseFloat(f[11], 64)
	stime, _ := strconv.ParseFloat(f[12], 64)
	return rssMB, (utime + stime) / 100 // USER_HZ is 100 on Linux
}
