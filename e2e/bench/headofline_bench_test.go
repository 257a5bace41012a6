package bench

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"text/tabwriter"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/metadata"

	"github.com/olmv1/olmv1/rukpak/pkg/source"
)

// brokenReportTimeout is how long each broken Operator is given to report why it fails: rukpak's
// unpack timeout (source.DefaultTimeout, which bounds the stalled pull) and two minutes more.
const brokenReportTimeout = source.DefaultTimeout + 2*time.Minute

// BenchmarkOperatorsHeadOfLine is issue 36 item 3, "no head-of-line blocking", on the local control
// plane. N healthy Operators ($OLMV1_BENCH_OPERATORS, default 100; `make bench
// BENCH=OperatorsHeadOfLine N=…`), each a package of its own as in BenchmarkOperatorsInstall, are
// installed twice in one environment, each time until all are Installed and Healthy:
//
//  1. alone: the first half created, then the second half;
//  2. with three broken Operators created after the first half (another N packages, so that no
//     cache of the first install helps): a registry+v1 bundle whose registry (a listener of this
//     benchmark on 127.0.0.1) accepts connections and never answers; a Helm chart whose template
//     renders for about three times rukpak's render limit (benchHelmRenderTimeout, set by startOLM);
//     a registry+v1 bundle with a layer that decompresses to more than rukpak's 2 GiB unpack limit.
//
// The broken packages are in a catalog of their own, served during both installs, so that both
// resolve against the same catalogs. The first install's Operators and namespaces are gone before
// the second starts. It prints `N healthy Operators Installed in X s alone, Y s beside 3 broken ones
// (ratio R)` and a table, then, for each broken Operator, the first reason its Installed (or
// Resolved) condition gave that is not a pending one, its message, and how long after its
// creation it appeared (waiting at most brokenReportTimeout). Metrics:
//
//	s-alone, s-beside-broken     create → all N Installed and Healthy (ns/op is s-beside-broken)
//	ratio                        s-beside-broken / s-alone (issue 36: at most 1.10)
//	*-p50-s, *-p99-s             per Operator, its create → it is Installed and Healthy
//	*-report-s                   a broken Operator's create → its failure reported (-1: never)
//	rukpak-cpu-s-*               rukpak's CPU seconds during each install
//
// With $OLMV1_BENCH_STALLED=K, K of the broken Operators have their bundle on the stalling registry
// (default 1): K at least rukpak's --max-concurrent-reconciles (8) shows what stalled pulls do to
// everything else.
func BenchmarkOperatorsHeadOfLine(b *testing.B) {
	b.StopTimer() // ns/op is the install beside the broken Operators only
	startOLM(b)
	n, stalled := benchOperatorCount(b), benchStalledCount(b)
	timeout := 5*time.Minute + time.Duration(n)*500*time.Millisecond
	if stalled > 1 {
		timeout += source.DefaultTimeout // stalled pulls may hold every rukpak worker for that long
	}
	ctx := context.Background()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		prefix := fmt.Sprintf("hol%d", benchRuns.Add(1))
		pushStart := time.Now()
		alone := pushBenchOperators(ctx, b, prefix+"-a", n)
		beside := pushBenchOperators(ctx, b, prefix+"-b", n)
		broken := pushBrokenOperators(ctx, b, prefix+"-x", stalled)
		defer broken.stall.Close() // when a step fails; Close may be called twice
		catalogs := map[string]string{
			prefix + "-a-catalog": alone.catalogRef(0), prefix + "-b-catalog": beside.catalogRef(0), prefix + "-x-catalog": broken.catalogRef,
		}
		for name, ref := range catalogs {
			createCatalog(ctx, b, name, ref)
		}
		fmt.Printf("%d healthy bundles, %d broken ones and 3 catalogs pushed and served in %v\n", 2*n, len(broken.bundles), time.Since(pushStart).Round(time.Second))
		if err := ensurePodCapacity(ctx, n); err != nil {
			b.Fatal(err)
		}

		var r headOfLineRun
		r.alone = installHealthy(ctx, b, alone, timeout, func() {})
		uninstall(ctx, b, timeout, alone.prefix, func() error { return deleteOperators(ctx, alone) })

		watchCtx, cancel := context.WithTimeout(ctx, timeout+brokenReportTimeout)
		defer cancel()
		seen := watchBroken(watchCtx, broken.names())
		var brokenCreated map[string]time.Time
		b.StartTimer()
		r.beside = installHealthy(ctx, b, beside, timeout, func() {
			var err error
			if brokenCreated, err = createNamedOperators(ctx, broken.names()); err != nil {
				b.Fatal(err)
			}
		})
		b.StopTimer()
		r.broken = brokenReports(ctx, broken, brokenCreated, <-seen)
		cancel()
		r.stalledConnections = broken.stall.Accepted()
		r.print(n)
		r.report(b)

		// First the stalling registry goes: pulls still waiting on it end (their connections close),
		// and the retries fail at once, so that no rukpak worker waits on it during the removal.
		broken.stall.Close()
		uninstall(ctx, b, timeout, beside.prefix, func() error { return deleteOperators(ctx, beside) })
		uninstall(ctx, b, timeout, broken.prefix, func() error {
			return forEachName(broken.names(), func(name string) error {
				if err := olm.dc.Resource(operatorGVR).Delete(ctx, name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
					return err
				}
				return nil
			})
		})
		for name := range catalogs {
			_ = olm.dc.Resource(catalogGVR).Delete(ctx, name, metav1.DeleteOptions{})
		}
	}
}

// benchStalledCount is $OLMV1_BENCH_STALLED, how many of BenchmarkOperatorsHeadOfLine's broken
// Operators have their bundle on the stalling registry: 1 (issue 36's case) when unset.
func benchStalledCount(b *testing.B) int {
	s := os.Getenv("OLMV1_BENCH_STALLED")
	if s == "" {
		return 1
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 {
		b.Fatalf("OLMV1_BENCH_STALLED=%q: want a positive number of Operators", s)
	}
	return n
}

// headOfLineRun is what one round of BenchmarkOperatorsHeadOfLine measured.
type headOfLineRun struct {
	alone, beside installRun
	broken        []brokenReport
	// stalledConnections is how many connections rukpak opened to the stalling registry.
	stalledConnections int
}

// installRun is one install of N healthy Operators.
type installRun struct {
	took                     time.Duration
	p50, p99                 time.Duration
	ocCPU, rukpakCPU, apiCPU float64
	load0, load1             string // /proc/loadavg at the start and the end
}

// installHealthy creates the Operators of fx, the first half, then calls middle, then the second
// half, and waits until all are Installed and Healthy.
func installHealthy(ctx context.Context, b *testing.B, fx benchFixture, timeout time.Duration, middle func()) installRun {
	b.Helper()
	oc, rukpak, api := controllerProcess("operator-controller"), controllerProcess("rukpak"), clusterProcess("kube-apiserver")
	r := installRun{load0: loadAverage()}
	ocCPU0, rukpakCPU0, apiCPU0 := oc.cpuSeconds(), rukpak.cpuSeconds(), api.cpuSeconds()
	names := fx.names()
	start := time.Now()
	created, err := createNamedOperators(ctx, names[:len(names)/2])
	if err != nil {
		b.Fatal(err)
	}
	middle()
	rest, err := createNamedOperators(ctx, names[len(names)/2:])
	if err != nil {
		b.Fatal(err)
	}
	for name, at := range rest {
		created[name] = at
	}
	done, err := waitOperators(ctx, fx.prefix, fx.n, start, timeout, "", true)
	if err != nil {
		b.Fatal(err)
	}
	r.took = time.Since(start)
	r.ocCPU, r.rukpakCPU, r.apiCPU = oc.cpuSeconds()-ocCPU0, rukpak.cpuSeconds()-rukpakCPU0, api.cpuSeconds()-apiCPU0
	perOp := done.durations(created)
	r.p50, r.p99 = quantile(perOp, 0.50), quantile(perOp, 0.99)
	r.load1 = loadAverage()
	return r
}

// uninstall deletes (with del) the Operators named prefix-* and waits until they, their
// BundleDeployments and their namespaces are gone, so that the next install does not share the
// machine with their removal.
func uninstall(ctx context.Context, b *testing.B, timeout time.Duration, prefix string, del func() error) {
	b.Helper()
	if err := del(); err != nil {
		b.Fatal(err)
	}
	if err := waitGone(ctx, prefix, timeout); err != nil {
		b.Fatalf("Operators %s-* not removed: %v", prefix, err)
	}
	if err := waitNamespacesGone(ctx, prefix, timeout); err != nil {
		b.Fatalf("namespaces %s-* not removed: %v", prefix, err)
	}
}

// waitNamespacesGone polls (metadata only, every 250 ms) until no namespace named prefix-* is left.
func waitNamespacesGone(ctx context.Context, prefix string, timeout time.Duration) error {
	mc, err := metadata.NewForConfig(benchConfig())
	if err != nil {
		return err
	}
	var left int
	err = wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		list, err := mc.Resource(schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		left = 0
		for _, it := range list.Items {
			if strings.HasPrefix(it.GetName(), prefix+"-") {
				left++
			}
		}
		return left == 0, nil
	})
	if err != nil {
		return fmt.Errorf("%d left: %w", left, err)
	}
	return nil
}

// brokenSeen is what a watch saw of one broken Operator.
type brokenSeen struct {
	// reportedAt, reason and message are its first failure report (zero when none yet).
	reportedAt      time.Time
	reason, message string
	// last is its Installed condition as last seen, "reason: message".
	last string
}

// watchBroken watches the Operators names until each has reported a failure (failureReported) or ctx
// ends, and then sends what it saw.
func watchBroken(ctx context.Context, names []string) <-chan map[string]brokenSeen {
	out := make(chan map[string]brokenSeen, 1)
	go func() {
		ctx, cancel := context.WithCancel(ctx)
		defer cancel()
		seen := map[string]brokenSeen{}
		wanted := map[string]bool{}
		for _, name := range names {
			wanted[name] = true
		}
		reported := 0
		events := make(chan watchedObject)
		go watchObjects(ctx, operatorGVR, events)
		for reported < len(names) {
			select {
			case ev := <-events:
				name := ev.obj.GetName()
				s := seen[name]
				if !wanted[name] || !s.reportedAt.IsZero() {
					continue
				}
				if _, reason, message, ok := condition(ev.obj, "Installed"); ok {
					s.last = reason + ": " + message
				}
				if reason, message, ok := failureReported(ev.obj); ok {
					s.reportedAt, s.reason, s.message = time.Now(), reason, message
					reported++
				}
				seen[name] = s
			case <-ctx.Done():
				out <- seen
				return
			}
		}
		out <- seen
	}()
	return out
}

// failureReported is the first condition of Installed and Resolved that is False with a reason
// other than a pending one: what tells the user that, and why, the Operator is not installed.
func failureReported(u *unstructured.Unstructured) (reason, message string, ok bool) {
	for _, typ := range []string{"Installed", "Resolved"} {
		status, reason, message, found := condition(u, typ)
		if found && status == "False" && reason != "" && reason != "InstallationPending" && reason != "ResolutionPending" {
			return reason, message, true
		}
	}
	return "", "", false
}

// condition is the status, reason and message of condition typ of u.
func condition(u *unstructured.Unstructured, typ string) (status, reason, message string, found bool) {
	m := conditionOf(u, typ)
	if m == nil {
		return "", "", "", false
	}
	status, _ = m["status"].(string)
	reason, _ = m["reason"].(string)
	message, _ = m["message"].(string)
	return status, reason, message, true
}

// brokenReport is what one broken Operator reported.
type brokenReport struct {
	what, unit, name string
	// after is from its creation to its failure reported; zero when it never was.
	after           time.Duration
	reason, message string
	// final is its Installed condition when the report was collected, when it differs from the report.
	final string
}

// brokenReports joins what the watch saw with when each broken Operator was created, and reads each
// once more: a report may have been replaced since.
func brokenReports(ctx context.Context, f brokenFixture, created map[string]time.Time, seen map[string]brokenSeen) []brokenReport {
	var out []brokenReport
	for _, bb := range f.bundles {
		s := seen[bb.pkg]
		r := brokenReport{what: bb.what, unit: bb.unit, name: bb.pkg, reason: s.reason, message: s.message}
		if !s.reportedAt.IsZero() {
			r.after = s.reportedAt.Sub(created[bb.pkg])
		} else {
			r.final = s.last
		}
		if u, err := olm.dc.Resource(operatorGVR).Get(ctx, bb.pkg, metav1.GetOptions{}); err == nil {
			if _, reason, message, ok := condition(u, "Installed"); ok && (reason != r.reason || message != r.message) {
				r.final = reason + ": " + message
			}
		}
		out = append(out, r)
	}
	return out
}

// loadAverage is the first three fields of /proc/loadavg.
func loadAverage() string {
	data, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	f := strings.Fields(string(data))
	if len(f) < 3 {
		return "?"
	}
	return strings.Join(f[:3], " ")
}

func (r headOfLineRun) ratio() float64 { return r.beside.took.Seconds() / r.alone.took.Seconds() }

// print writes the run's line and tables to stdout.
func (r headOfLineRun) print(n int) {
	fmt.Printf("%d healthy Operators Installed in %.1f s alone, %.1f s beside %d broken ones (ratio %.2f)\n",
		n, r.alone.took.Seconds(), r.beside.took.Seconds(), len(r.broken), r.ratio())
	w := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintf(w, "N=%d healthy\talone\tbeside %d broken\n", n, len(r.broken))
	fmt.Fprintf(w, "all Installed+Healthy (s)\t%.1f\t%.1f\n", r.alone.took.Seconds(), r.beside.took.Seconds())
	fmt.Fprintf(w, "create → Installed+Healthy p50 / p99 (s)\t%.1f / %.1f\t%.1f / %.1f\n",
		r.alone.p50.Seconds(), r.alone.p99.Seconds(), r.beside.p50.Seconds(), r.beside.p99.Seconds())
	fmt.Fprintf(w, "operator-controller CPU (s)\t%.1f\t%.1f\n", r.alone.ocCPU, r.beside.ocCPU)
	fmt.Fprintf(w, "rukpak CPU (s)\t%.1f\t%.1f\n", r.alone.rukpakCPU, r.beside.rukpakCPU)
	fmt.Fprintf(w, "kube-apiserver CPU (s)\t%.1f\t%.1f\n", r.alone.apiCPU, r.beside.apiCPU)
	fmt.Fprintf(w, "load average at start → end\t%s → %s\t%s → %s\n", r.alone.load0, r.alone.load1, r.beside.load0, r.beside.load1)
	_ = w.Flush()
	w = tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintf(w, "broken Operator\tfailure\treported after (s)\treason\n")
	for _, br := range r.broken {
		after := fmt.Sprintf("not within %v", brokenReportTimeout)
		if br.after > 0 {
			after = fmt.Sprintf("%.1f", br.after.Seconds())
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\n", br.name, br.what, after, br.reason)
	}
	_ = w.Flush()
	for _, br := range r.broken {
		if br.message != "" {
			fmt.Printf("  %s: %s: %s\n", br.name, br.reason, br.message)
		}
		if br.final != "" {
			fmt.Printf("  %s, Installed at the end: %s\n", br.name, br.final)
		}
	}
	fmt.Printf("  connections accepted by the stalling registry: %d\n", r.stalledConnections)
}

func (r headOfLineRun) report(b *testing.B) {
	b.ReportMetric(r.alone.took.Seconds(), "s-alone")
	b.ReportMetric(r.beside.took.Seconds(), "s-beside-broken")
	b.ReportMetric(r.ratio(), "ratio")
	b.ReportMetric(r.alone.p50.Seconds(), "alone-p50-s")
	b.ReportMetric(r.alone.p99.Seconds(), "alone-p99-s")
	b.ReportMetric(r.beside.p50.Seconds(), "beside-p50-s")
	b.ReportMetric(r.beside.p99.Seconds(), "beside-p99-s")
	b.ReportMetric(r.alone.rukpakCPU, "rukpak-cpu-s-alone")
	b.ReportMetric(r.beside.rukpakCPU, "rukpak-cpu-s-beside")
	for _, br := range r.broken {
		v := -1.0
		if br.after > 0 {
			v = br.after.Seconds()
		}
		b.ReportMetric(v, br.unit)
	}
}
