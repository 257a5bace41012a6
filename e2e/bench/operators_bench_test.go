package bench

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"text/tabwriter"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// benchRuns numbers the runs of BenchmarkOperatorsInstall in this process, so that -count or a
// larger b.N never reuses the names of a run whose namespaces may still be terminating.
var benchRuns atomic.Int32

// benchOperatorCount is $OLMV1_BENCH_OPERATORS (`make bench N=…`), 100 when unset.
func benchOperatorCount(b *testing.B) int {
	s := os.Getenv("OLMV1_BENCH_OPERATORS")
	if s == "" {
		return 100
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 {
		b.Fatalf("OLMV1_BENCH_OPERATORS=%q: want a positive number of Operators", s)
	}
	return n
}

// installedOnly is $OLMV1_BENCH_INSTALLED_ONLY=1: a run stops once every Operator is Installed,
// Healthy or not, and prints the install's figures only (no wait for Healthy, no idle window,
// upgrade or removal). The install takes a minute at N = 1,000, the whole run 13: with it, several
// runs at every N fit in the time one full run takes, for the spread of the cost per Operator.
func installedOnly(b *testing.B) bool {
	switch s := os.Getenv("OLMV1_BENCH_INSTALLED_ONLY"); s {
	case "", "0":
		return false
	case "1":
		return true
	default:
		b.Fatalf("OLMV1_BENCH_INSTALLED_ONLY=%q: want 1 (stop once every Operator is Installed) or 0", s)
		return false
	}
}

// idleWindow is how long the controllers' idle CPU is measured once every Operator is installed.
const idleWindow = 30 * time.Second

// BenchmarkOperatorsInstall is issue 36's benchmark on the local control plane: one catalog with N
// packages ($OLMV1_BENCH_OPERATORS, default 100; `make bench BENCH=OperatorsInstall N=…`), each a
// registry+v1 bundle image of its own (example-operator's, renamed), and N Operators naming only
// their package, created at once. Each run prints `N Operators Installed in X s` and a table:
//
//	s-to-all-installed        create → every Operator Installed and Healthy (ns/op is the same time)
//	installed-p50-s/-p99-s    per Operator, its create → it is Installed and Healthy
//	*-peak-MB, *-MB           each controller's peak RSS (VmHWM) and settled RSS after the idle window
//	*-cpu-s                   CPU seconds used during the install (kube-apiserver's too)
//	*-idle-cpu-pct            CPU over the 30 s idle window after install, % of one core
//	apiserver-req/op          kube-apiserver's apiserver_request_total during the install, per
//	                          Operator (every client: controllers, kube-controller-manager, scheduler, kwok)
//	*-req/op                  each controller's own rest_client_requests_total, per Operator
//	etcd-db-MB                etcd's database file once installed
//	s-to-all-upgraded         one catalog image update that gives every package 1.1.0 → every
//	                          Operator Installed and Healthy at 1.1.0
//	s-to-all-removed          deleting every Operator → no Operator or BundleDeployment left
//
// With $OLMV1_BENCH_PROFILE_DIR set, it writes CPU profiles of rukpak and operator-controller over
// the install and over the upgrade ($OLMV1_BENCH_PROFILE_SECONDS each, default 30), and heap
// profiles once installed and once upgraded. With $OLMV1_BENCH_INSTALLED_ONLY=1 a run stops once
// every Operator is Installed (installedOnly).
func BenchmarkOperatorsInstall(b *testing.B) {
	b.StopTimer() // ns/op is the time to install the Operators only: not starting the environment
	startOLM(b)
	n, stopAtInstalled := benchOperatorCount(b), installedOnly(b)
	timeout := 5*time.Minute + time.Duration(n)*500*time.Millisecond
	ctx := context.Background()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		prefix := fmt.Sprintf("bench%d-op", benchRuns.Add(1))
		pushStart := time.Now()
		fx := pushBenchOperators(ctx, b, prefix, n)
		catalog := prefix + "-catalog"
		createCatalog(ctx, b, catalog, fx.catalogRef(0))
		fmt.Printf("%d bundles and 2 catalogs pushed and served in %v\n", 2*n, time.Since(pushStart).Round(time.Second))
		r := runOperators(ctx, b, fx, catalog, timeout, stopAtInstalled)
		if stopAtInstalled {
			r.printInstalled(n)
		} else {
			r.print(n)
		}
		r.report(b, n, stopAtInstalled)
	}
}

type operatorsRun struct {
	install, upgrade, remove          time.Duration
	installedOnly, upgradedOnly       time.Duration // to all Installed, Healthy or not
	p50, p99                          time.Duration
	ocPeak, rukpakPeak, ocRSS, rukRSS float64
	ocCPU, rukpakCPU, apiCPU          float64
	ocIdle, rukpakIdle                float64
	requests                          requestCounts
	etcdMB                            float64
	upgradeReq, removeReq             requestCounts
	upgradeOCCPU, upgradeRukpakCPU    float64
	removeOCCPU, removeRukpakCPU      float64
	requestsErr                       error
}

func runOperators(ctx context.Context, b *testing.B, fx benchFixture, catalog string, timeout time.Duration, stopAtInstalled bool) operatorsRun {
	var r operatorsRun
	oc, rukpak, api := controllerProcess("operator-controller"), controllerProcess("rukpak"), clusterProcess("kube-apiserver")
	req0, reqErr := readRequestCounts(ctx)
	ocCPU0, rukpakCPU0, apiCPU0 := oc.cpuSeconds(), rukpak.cpuSeconds(), api.cpuSeconds()
	seconds := 30
	if s, err := strconv.Atoi(os.Getenv("OLMV1_BENCH_PROFILE_SECONDS")); err == nil && s > 0 {
		seconds = s
	}
	if err := ensurePodCapacity(ctx, fx.n); err != nil {
		b.Fatal(err)
	}
	prof := startCPUProfiles(fmt.Sprintf("install-%d", fx.n), seconds)

	b.StartTimer()
	start, cpu0 := time.Now(), cpuNow()
	created, err := createOperators(ctx, fx)
	if err != nil {
		b.Fatal(err)
	}
	done, err := waitOperators(ctx, fx.prefix, fx.n, start, timeout, "", !stopAtInstalled)
	if err != nil {
		b.Fatal(err)
	}
	r.install = time.Since(start)
	b.StopTimer()
	r.installedOnly = done.lastInstalled.Sub(start)
	// The line first, before the idle window, the upgrade and the removal: a run stopped later keeps it.
	if stopAtInstalled {
		fmt.Printf("%d Operators Installed (Healthy or not) in %.1f s\n", fx.n, r.installedOnly.Seconds())
	} else {
		fmt.Printf("%d Operators Installed in %.1f s\n", fx.n, r.install.Seconds())
	}
	fmt.Printf("CPU from the first create to the last Operator Installed (%.1f s): %v\n", r.installedOnly.Seconds(), done.cpuAtInstalled.minus(cpu0))
	var lastCreate time.Time
	for _, at := range created {
		if at.After(lastCreate) {
			lastCreate = at
		}
	}
	fmt.Printf("install timeline: the last create sent %.1f s after the first; %s\n", lastCreate.Sub(start).Seconds(), done.timeline())

	r.ocCPU, r.rukpakCPU, r.apiCPU = oc.cpuSeconds()-ocCPU0, rukpak.cpuSeconds()-rukpakCPU0, api.cpuSeconds()-apiCPU0
	req1, err := readRequestCounts(ctx)
	if reqErr == nil {
		reqErr = err
	}
	r.requests, r.requestsErr = req1.minus(req0), reqErr
	printQueues("install", req0, req1, reqErr, fx.n)
	perOp := done.durations(created)
	r.p50, r.p99 = quantile(perOp, 0.50), quantile(perOp, 0.99)
	<-prof.done
	heapProfiles(fmt.Sprintf("installed-%d", fx.n))
	if stopAtInstalled {
		r.ocPeak, r.rukpakPeak = oc.peakRSSMB(), rukpak.peakRSSMB()
		return r
	}

	idle0oc, idle0rk := oc.cpuSeconds(), rukpak.cpuSeconds()
	time.Sleep(idleWindow)
	r.ocIdle = 100 * (oc.cpuSeconds() - idle0oc) / idleWindow.Seconds()
	r.rukpakIdle = 100 * (rukpak.cpuSeconds() - idle0rk) / idleWindow.Seconds()
	r.ocRSS, r.rukRSS = oc.rssMB(), rukpak.rssMB()
	r.etcdMB = etcdDBBytes() / (1 << 20)

	// One catalog update upgrades every package.
	ocCPU0, rukpakCPU0 = oc.cpuSeconds(), rukpak.cpuSeconds()
	req0, upgradeErr := readRequestCounts(ctx)
	// A rolling update runs each Deployment's new pod beside its old one: with room for only n pods
	// (plus 50) the rollouts of the upgrade waited on "Too many pods", not on OLM.
	if err := ensurePodCapacity(ctx, 2*fx.n); err != nil {
		b.Fatal(err)
	}
	// VmHWM so far (install and idle window): the table's peak also covers the upgrade and removal.
	fmt.Printf("peak RSS before the upgrade (MiB): operator-controller %.0f, rukpak %.0f\n", oc.peakRSSMB(), rukpak.peakRSSMB())
	prof = startCPUProfiles(fmt.Sprintf("upgrade-%d", fx.n), seconds)
	start, cpu0 = time.Now(), cpuNow()
	patch := fmt.Sprintf(`{"spec":{"source":{"image":{"ref":%q}}}}`, fx.catalogRef(1))
	if _, err := olm.dc.Resource(catalogGVR).Patch(ctx, catalog, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		b.Fatal(err)
	}
	upgraded, err := waitOperators(ctx, fx.prefix, fx.n, start, timeout, "1.1.0", true)
	if err != nil {
		b.Fatal(err)
	}
	r.upgrade = time.Since(start)
	r.upgradedOnly = upgraded.lastInstalled.Sub(start)
	fmt.Printf("CPU from the catalog update to the last Operator Installed at 1.1.0 (%.1f s): %v\n", r.upgradedOnly.Seconds(), upgraded.cpuAtInstalled.minus(cpu0))
	fmt.Printf("upgrade timeline: %s\n", upgraded.timeline())
	req1, err = readRequestCounts(ctx)
	r.upgradeReq = req1.minus(req0)
	printQueues("upgrade", req0, req1, errors.Join(upgradeErr, err), fx.n)
	r.upgradeOCCPU, r.upgradeRukpakCPU = oc.cpuSeconds()-ocCPU0, rukpak.cpuSeconds()-rukpakCPU0
	heapProfiles(fmt.Sprintf("upgraded-%d", fx.n))
	<-prof.done

	ocCPU0, rukpakCPU0 = oc.cpuSeconds(), rukpak.cpuSeconds()
	req0, _ = readRequestCounts(ctx)
	start = time.Now()
	if err := deleteOperators(ctx, fx); err != nil {
		b.Fatal(err)
	}
	if err := waitGone(ctx, fx.prefix, timeout); err != nil {
		b.Fatal(err)
	}
	r.remove = time.Since(start)
	req1, _ = readRequestCounts(ctx)
	r.removeReq = req1.minus(req0)
	r.removeOCCPU, r.removeRukpakCPU = oc.cpuSeconds()-ocCPU0, rukpak.cpuSeconds()-rukpakCPU0
	_ = olm.dc.Resource(catalogGVR).Delete(ctx, catalog, metav1.DeleteOptions{})
	r.ocPeak, r.rukpakPeak = oc.peakRSSMB(), rukpak.peakRSSMB()
	return r
}

// printQueues prints the controllers' work queues between two readings (err: an error of either).
func printQueues(phase string, before, after requestCounts, err error, n int) {
	if err != nil {
		fmt.Printf("%s work queues: %v\n", phase, err)
		return
	}
	fmt.Printf("%s work queues (reconcile time includes waiting on requests and locks): %s\n", phase, queueSummary(before.queues, after.queues, n))
}

// print writes the run's table to stdout.
func (r operatorsRun) print(n int) {
	per := func(v float64) string { return fmt.Sprintf("%.1f", v/float64(n)) }
	w := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintf(w, "N=%d\tinstall\tupgrade (one catalog update)\tremove\n", n)
	fmt.Fprintf(w, "all Installed, Healthy or not (s)\t%.1f\t%.1f\t\n", r.installedOnly.Seconds(), r.upgradedOnly.Seconds())
	fmt.Fprintf(w, "all done: Installed+Healthy / gone (s)\t%.1f\t%.1f\t%.1f\n", r.install.Seconds(), r.upgrade.Seconds(), r.remove.Seconds())
	fmt.Fprintf(w, "per Operator (ms of wall time)\t%.1f\t%.1f\t%.1f\n",
		1000*r.install.Seconds()/float64(n), 1000*r.upgrade.Seconds()/float64(n), 1000*r.remove.Seconds()/float64(n))
	fmt.Fprintf(w, "create → Installed+Healthy p50 / p99 (s)\t%.1f / %.1f\t\t\n", r.p50.Seconds(), r.p99.Seconds())
	fmt.Fprintf(w, "operator-controller CPU (s)\t%.1f\t%.1f\t%.1f\n", r.ocCPU, r.upgradeOCCPU, r.removeOCCPU)
	fmt.Fprintf(w, "rukpak CPU (s)\t%.1f\t%.1f\t%.1f\n", r.rukpakCPU, r.upgradeRukpakCPU, r.removeRukpakCPU)
	fmt.Fprintf(w, "kube-apiserver CPU (s)\t%.1f\t\t\n", r.apiCPU)
	if r.requestsErr != nil {
		fmt.Fprintf(w, "requests\t%v\t\t\n", r.requestsErr)
	} else {
		fmt.Fprintf(w, "kube-apiserver requests / Operator (all clients)\t%s\t%s\t%s\n", per(r.requests.apiserver), per(r.upgradeReq.apiserver), per(r.removeReq.apiserver))
		fmt.Fprintf(w, "operator-controller requests / Operator\t%s\t%s\t%s\n", per(r.requests.operatorController), per(r.upgradeReq.operatorController), per(r.removeReq.operatorController))
		fmt.Fprintf(w, "rukpak requests / Operator\t%s\t%s\t%s\n", per(r.requests.rukpak), per(r.upgradeReq.rukpak), per(r.removeReq.rukpak))
	}
	_ = w.Flush()
	// Where the requests went (every client), per Operator: what to cut first.
	fmt.Printf("kube-apiserver requests / Operator by verb and resource, install: %s\n", strings.Join(r.requests.topKinds(n, 14), ", "))
	fmt.Printf("kube-apiserver requests / Operator by verb and resource, upgrade: %s\n", strings.Join(r.upgradeReq.topKinds(n, 14), ", "))
	w = tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintf(w, "etcd db once installed (MiB)\t%.1f\t\t\n", r.etcdMB)
	fmt.Fprintf(w, "RSS peak / settled (MiB)\toperator-controller %.0f / %.0f\trukpak %.0f / %.0f\t\n", r.ocPeak, r.ocRSS, r.rukpakPeak, r.rukRSS)
	fmt.Fprintf(w, "idle CPU over %v, %% of a core\toperator-controller %.2f\trukpak %.2f\t\n", idleWindow, r.ocIdle, r.rukpakIdle)
	_ = w.Flush()
}

// printInstalled writes the table of a run stopped once every Operator was Installed ($OLMV1_BENCH_INSTALLED_ONLY).
func (r operatorsRun) printInstalled(n int) {
	per := func(v float64) string { return fmt.Sprintf("%.1f", v/float64(n)) }
	w := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintf(w, "N=%d, stopped once all Installed\tinstall\n", n)
	fmt.Fprintf(w, "all Installed, Healthy or not (s)\t%.1f\n", r.installedOnly.Seconds())
	fmt.Fprintf(w, "per Operator (ms of wall time)\t%.1f\n", 1000*r.installedOnly.Seconds()/float64(n))
	fmt.Fprintf(w, "operator-controller / rukpak / kube-apiserver CPU (s)\t%.1f / %.1f / %.1f\n", r.ocCPU, r.rukpakCPU, r.apiCPU)
	if r.requestsErr != nil {
		fmt.Fprintf(w, "requests\t%v\n", r.requestsErr)
	} else {
		fmt.Fprintf(w, "kube-apiserver requests / Operator (all clients; operator-controller; rukpak)\t%s (%s; %s)\n",
			per(r.requests.apiserver), per(r.requests.operatorController), per(r.requests.rukpak))
	}
	fmt.Fprintf(w, "RSS peak so far (MiB)\toperator-controller %.0f, rukpak %.0f\n", r.ocPeak, r.rukpakPeak)
	_ = w.Flush()
	fmt.Printf("kube-apiserver requests / Operator by verb and resource, install: %s\n", strings.Join(r.requests.topKinds(n, 14), ", "))
}

// report reports the run's metrics; only those of the install up to all Installed when the run
// stopped there ($OLMV1_BENCH_INSTALLED_ONLY).
func (r operatorsRun) report(b *testing.B, n int, stoppedAtInstalled bool) {
	b.ReportMetric(r.installedOnly.Seconds(), "s-to-all-installed-not-healthy")
	b.ReportMetric(1000*r.installedOnly.Seconds()/float64(n), "ms-per-operator-installed-not-healthy")
	b.ReportMetric(r.ocPeak, "operator-controller-peak-MB")
	b.ReportMetric(r.rukpakPeak, "rukpak-peak-MB")
	b.ReportMetric(r.ocCPU, "operator-controller-cpu-s")
	b.ReportMetric(r.rukpakCPU, "rukpak-cpu-s")
	if r.requestsErr == nil {
		b.ReportMetric(r.requests.apiserver/float64(n), "apiserver-req/op")
		b.ReportMetric(r.requests.operatorController/float64(n), "operator-controller-req/op")
		b.ReportMetric(r.requests.rukpak/float64(n), "rukpak-req/op")
	}
	if stoppedAtInstalled {
		return
	}
	b.ReportMetric(r.install.Seconds(), "s-to-all-installed")
	b.ReportMetric(r.p50.Seconds(), "installed-p50-s")
	b.ReportMetric(r.p99.Seconds(), "installed-p99-s")
	b.ReportMetric(r.upgrade.Seconds(), "s-to-all-upgraded")
	b.ReportMetric(r.remove.Seconds(), "s-to-all-removed")
	b.ReportMetric(r.ocRSS, "operator-controller-MB")
	b.ReportMetric(r.rukRSS, "rukpak-MB")
	b.ReportMetric(r.ocIdle, "operator-controller-idle-cpu-pct")
	b.ReportMetric(r.rukpakIdle, "rukpak-idle-cpu-pct")
	b.ReportMetric(r.etcdMB, "etcd-db-MB")
}
