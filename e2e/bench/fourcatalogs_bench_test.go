package bench

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/olmv1/olmv1/catalogd/pkg/scaletestdata"
	"github.com/olmv1/olmv1/e2e/localcluster"
	"github.com/olmv1/olmv1/rukpak/pkg/imagebuild"
)

// BenchmarkFourCatalogs (issue 36 item 4, `make bench BENCH=FourCatalogs`) serves four catalogs
// about the size of OpenShift's default ones from one catalogd with the CatalogMetadata API on.
// Each catalog is community-v4.20 and community-v4.16 of $OLMV1_TESTDATA with every package renamed
// per catalog (suffixes -c<i> and -c<i>-416: the two share package names) and the groups of the
// APIs the bundles provide and require prefixed likewise (c<i>., c<i>-416.; only one bundle may
// provide an API, so without it Operators of two catalogs would conflict), about 35 MB of FBC each,
// built and pushed to the local registry by the benchmark. It measures:
//
//   - unpack: the four Catalogs created at once, the time until each (and all) is Serving, under
//     catalogd's default --max-concurrent-unpacks (the number catalogd logged is reported), and
//     catalogd's CPU time meanwhile;
//   - catalogd's RSS: peak (VmHWM of a catalogd restarted before the unpack) and settled (after
//     fourSettle with nothing to do, or $OLMV1_BENCH_SETTLE, e.g. 150s to see past Go's 2-minute
//     forced GC of an idle process; sampled from /proc every 100 ms);
//   - `kubectl get catalogmetadata` of one package (a list through kube-apiserver with the field
//     selector spec.catalog,spec.package) of a small package and of the largest one: p50/p99 over
//     fourLists lists;
//   - resolution of fourOperators Operators spread evenly over the four catalogs, rukpak stopped
//     (no bundle image is pulled), operator-controller restarted: time from the first create until
//     all are Resolved, and operator-controller's RSS.
func BenchmarkFourCatalogs(b *testing.B) {
	for _, src := range fourCatalogSources {
		if dir := filepath.Join(testdata(), "catalogs", src.dir); !isDir(dir) {
			b.Skip("real catalog not found at " + dir + " (set OLMV1_TESTDATA)")
		}
	}
	startOLM(b)
	ctx := context.Background()
	cats := buildFourCatalogs(ctx, b)
	var total int64
	for _, c := range cats {
		total += c.bytes
	}
	if total < 120<<20 {
		b.Fatalf("the four catalogs hold %.1f MiB of FBC, want at least 120 MiB", float64(total)/(1<<20))
	}
	for i := 0; i < b.N; i++ {
		r := runFourCatalogs(ctx, b, cats)
		r.report(b, cats, total)
	}
}

// fourCatalogSources are the real catalogs each of the four is made of, with the suffix their
// packages get after the catalog's own (-c<i>).
var fourCatalogSources = []struct{ dir, suffix string }{
	{"community-v4.20", ""}, {"community-v4.16", "-416"},
}

const (
	fourCatalogCount = 4
	fourOperators    = 100
	fourLists        = 50
	fourSettle       = 30 * time.Second // default idle window before the settled RSS
	fourSmallPackage = "kube-green"     // v4.20's kube-green: 1 channel, a few small bundles
)

// fourCatalog is one catalog of BenchmarkFourCatalogs.
type fourCatalog struct {
	name, ref    string
	bytes        int64    // FBC bytes (the catalog.yaml files)
	packages     []string // sorted
	largest      string   // the package of most bytes
	largestBytes int64
}

func isDir(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.IsDir()
}

// buildFourCatalogs writes, builds and pushes the four catalog images.
func buildFourCatalogs(ctx context.Context, b *testing.B) []*fourCatalog {
	b.Helper()
	tmp := b.TempDir()
	var cats []*fourCatalog
	for i := range fourCatalogCount {
		c := &fourCatalog{name: fmt.Sprintf("four-c%d", i)}
		dir := filepath.Join(tmp, c.name)
		for _, src := range fourCatalogSources {
			suffix := fmt.Sprintf("-c%d%s", i, src.suffix)
			if err := scaletestdata.RenamedCopy(filepath.Join(testdata(), "catalogs", src.dir), dir, suffix, true); err != nil {
				b.Fatalf("building %s: %v", c.name, err)
			}
		}
		pkgs, err := os.ReadDir(dir)
		if err != nil {
			b.Fatal(err)
		}
		for _, p := range pkgs {
			data, err := os.ReadFile(filepath.Join(dir, p.Name(), "catalog.yaml"))
			if err != nil {
				b.Fatal(err)
			}
			// The directory is named after the original's, not always the package (konflux holds
			// konflux-operator).
			name := fbcPackageName(data)
			if name == "" {
				b.Fatalf("%s/%s: no olm.package", c.name, p.Name())
			}
			size := int64(len(data))
			c.bytes += size
			c.packages = append(c.packages, name)
			if size > c.largestBytes {
				c.largest, c.largestBytes = name, size
			}
		}
		sort.Strings(c.packages)
		img, err := imagebuild.CatalogImage(dir)
		if err != nil {
			b.Fatal(err)
		}
		c.ref = fmt.Sprintf("%s/catalogs/four:c%d", olm.env.Registry.Addr, i)
		if _, err := imagebuild.Push(ctx, img, c.ref, imagebuild.WithInsecure()); err != nil {
			b.Fatal(err)
		}
		// The image is in the registry: the directory is not needed any more.
		if err := os.RemoveAll(dir); err != nil {
			b.Fatal(err)
		}
		cats = append(cats, c)
	}
	return cats
}

// fourResult is one round of BenchmarkFourCatalogs.
type fourResult struct {
	unpacks                 string // catalogd's --max-concurrent-unpacks, as it logged it
	serving                 map[string]time.Duration
	servingCPU              map[string]float64 // catalogd's CPU seconds since the create, when it was Serving
	allServing              time.Duration
	unpackCPU               float64
	idleRSS, idleAnon       float64
	peakRSS, sampledPeak    float64
	settle                  time.Duration
	settledRSS, settledAnon float64
	settledMin, settledMax  float64
	lists                   []listResult
	created, resolved       time.Duration
	ocIdle, ocRSS, ocPeak   float64
}

type listResult struct {
	catalog, pkg string
	blobs        int
	kib          float64
	p50, p99     time.Duration
}

func runFourCatalogs(ctx context.Context, b *testing.B, cats []*fourCatalog) fourResult {
	b.Helper()
	var r fourResult
	deleteFourCatalogs(ctx, b, cats)
	// A fresh catalogd: its VmHWM is this round's peak.
	cd := olm.env.Controller("catalogd")
	if cd == nil {
		b.Fatal("catalogd is not running")
	}
	if err := cd.KillAndRestart(ctx, 2*time.Minute); err != nil {
		b.Fatal(err)
	}
	if err := waitAPIService(ctx); err != nil {
		b.Fatal(err)
	}
	r.unpacks = loggedUnpacks(cd.Log)
	time.Sleep(2 * time.Second)
	proc := controllerProcess("catalogd")
	r.idleRSS, r.idleAnon = proc.rssMB(), procStatusMB(proc.pid, "RssAnon")

	// Unpack: the four Catalogs at once.
	sampler := startRSSSampler(proc, 100*time.Millisecond)
	cpu := proc.cpuSeconds()
	start := time.Now()
	for _, c := range cats {
		obj := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "catalogd.operatorframework.io/v1alpha1", "kind": "Catalog",
			"metadata": map[string]any{"name": c.name},
			"spec":     map[string]any{"source": map[string]any{"type": "Image", "image": map[string]any{"ref": c.ref}}},
		}}
		if _, err := olm.dc.Resource(catalogGVR).Create(ctx, obj, metav1.CreateOptions{}); err != nil {
			b.Fatal(err)
		}
	}
	r.serving, r.servingCPU = map[string]time.Duration{}, map[string]float64{}
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 15*time.Minute, true, func(ctx context.Context) (bool, error) {
		for _, c := range cats {
			if _, ok := r.serving[c.name]; ok {
				continue
			}
			u, err := olm.dc.Resource(catalogGVR).Get(ctx, c.name, metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			if conditionTrue(u, "Serving") {
				r.serving[c.name], r.servingCPU[c.name] = time.Since(start), proc.cpuSeconds()-cpu
			}
		}
		return len(r.serving) == len(cats), nil
	})
	if err != nil {
		b.Fatalf("catalogs not serving (%d of %d): %v", len(r.serving), len(cats), err)
	}
	r.allServing = time.Since(start)
	r.unpackCPU = proc.cpuSeconds() - cpu

	// Settled: the idle window with nothing to do; its last third is sampled.
	r.settle = settleWindow(b)
	time.Sleep(r.settle * 2 / 3)
	late := startRSSSampler(proc, 100*time.Millisecond)
	time.Sleep(r.settle / 3)
	r.settledMin, r.settledMax = late.stop()
	r.sampledPeak = max(sampler.peak(), r.settledMax)
	sampler.stop()
	r.settledRSS, r.settledAnon = proc.rssMB(), procStatusMB(proc.pid, "RssAnon")
	r.peakRSS = proc.peakRSSMB()

	// kubectl get catalogmetadata of a small and of the largest package.
	c0 := cats[0]
	for _, pkg := range []string{fourSmallPackage + "-c0", c0.largest} {
		r.lists = append(r.lists, timeLists(ctx, b, c0.name, pkg))
	}

	r.created, r.resolved, r.ocIdle, r.ocRSS, r.ocPeak = resolveFourOperators(ctx, b, cats)
	return r
}

// settleWindow is $OLMV1_BENCH_SETTLE or fourSettle.
func settleWindow(b *testing.B) time.Duration {
	v := os.Getenv("OLMV1_BENCH_SETTLE")
	if v == "" {
		return fourSettle
	}
	d, err := time.ParseDuration(v)
	if err != nil || d <= 0 {
		b.Fatalf("OLMV1_BENCH_SETTLE=%q: want a duration such as 150s", v)
	}
	return d
}

// loggedUnpacks is what catalogd logged of its concurrent unpacks ("" when not found).
func loggedUnpacks(logPath string) string {
	data, err := os.ReadFile(logPath)
	if err != nil {
		return ""
	}
	for _, line := range strings.Split(string(data), "\n") {
		if !strings.Contains(line, "concurrent unpacks") {
			continue
		}
		if i := strings.Index(line, `"max": "`); i >= 0 {
			return strings.SplitN(line[i+len(`"max": "`):], `"`, 2)[0]
		}
		if i := strings.Index(line, `"max":"`); i >= 0 {
			return strings.SplitN(line[i+len(`"max":"`):], `"`, 2)[0]
		}
		return strings.TrimSpace(line)
	}
	return ""
}

// rssSampler polls a process's RSS until stopped.
type rssSampler struct {
	mu       sync.Mutex
	min, max float64
	done     chan struct{}
	wg       sync.WaitGroup
}

func startRSSSampler(p processStats, every time.Duration) *rssSampler {
	s := &rssSampler{done: make(chan struct{})}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			if v := p.rssMB(); v > 0 {
				s.mu.Lock()
				if s.min == 0 || v < s.min {
					s.min = v
				}
				s.max = max(s.max, v)
				s.mu.Unlock()
			}
			select {
			case <-s.done:
				return
			case <-t.C:
			}
		}
	}()
	return s
}

func (s *rssSampler) peak() float64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.max
}

func (s *rssSampler) stop() (minMB, maxMB float64) {
	select {
	case <-s.done:
	default:
		close(s.done)
	}
	s.wg.Wait()
	return s.min, s.max
}

// timeLists lists pkg's blobs of catalog through kube-apiserver fourLists times (after one list
// not counted) and returns the latencies' p50 and p99.
func timeLists(ctx context.Context, b *testing.B, catalog, pkg string) listResult {
	b.Helper()
	rc := olm.dc.Resource(metadataGVR)
	opts := metav1.ListOptions{FieldSelector: "spec.catalog=" + catalog + ",spec.package=" + pkg}
	first, err := rc.List(ctx, opts)
	if err != nil {
		b.Fatal(err)
	}
	if len(first.Items) == 0 {
		b.Fatalf("no blobs for %s in %s", pkg, catalog)
	}
	raw, err := first.MarshalJSON()
	if err != nil {
		b.Fatal(err)
	}
	lat := make([]time.Duration, 0, fourLists)
	for range fourLists {
		start := time.Now()
		l, err := rc.List(ctx, opts)
		if err != nil {
			b.Fatal(err)
		}
		lat = append(lat, time.Since(start))
		if len(l.Items) != len(first.Items) {
			b.Fatalf("%s: got %d blobs, want %d", pkg, len(l.Items), len(first.Items))
		}
	}
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	return listResult{catalog: catalog, pkg: pkg, blobs: len(first.Items), kib: float64(len(raw)) / (1 << 10),
		p50: lat[len(lat)/2], p99: lat[(len(lat)*99)/100]}
}

// fbcPackageName is the name of the olm.package document of a catalog.yaml as declcfg.WriteYAML
// writes it (documents separated by "---" lines, top-level keys unindented), "" when there is none.
func fbcPackageName(data []byte) string {
	for _, doc := range strings.Split(string(data), "\n---\n") {
		lines := strings.Split(doc, "\n")
		isPackage, name := false, ""
		for _, l := range lines {
			switch {
			case l == "schema: olm.package":
				isPackage = true
			case strings.HasPrefix(l, "name: "):
				name = strings.TrimPrefix(l, "name: ")
			}
		}
		if isPackage {
			return name
		}
	}
	return ""
}

// fourUnresolvable are the packages (original names) that cannot resolve from the catalogs: they
// require an API that none of their packages provides (alloydb-omni-operator: cert-manager's
// Issuer; shipwright-operator: Tekton's TektonConfig).
var fourUnresolvable = []string{"alloydb-omni-operator", "shipwright-operator"}

// fourOperatorPackages picks fourOperators packages, as many of each catalog, spread evenly over
// its sorted resolvable packages. Each catalog's APIs are renamed with its packages, so Operators
// of the four catalogs (and of the two halves of one) do not compete for an API.
func fourOperatorPackages(cats []*fourCatalog) []string {
	per := fourOperators / len(cats)
	var pkgs []string
	for i, c := range cats {
		var ok []string
	next:
		for _, p := range c.packages {
			for _, u := range fourUnresolvable {
				if strings.HasPrefix(p, fmt.Sprintf("%s-c%d", u, i)) {
					continue next
				}
			}
			ok = append(ok, p)
		}
		for j := range per {
			pkgs = append(pkgs, ok[j*len(ok)/per])
		}
	}
	return pkgs
}

// resolveFourOperators creates an Operator ("four-<package>") for each of fourOperatorPackages on a
// restarted operator-controller with rukpak stopped, waits until all are Resolved, and deletes them.
func resolveFourOperators(ctx context.Context, b *testing.B, cats []*fourCatalog) (created, resolved time.Duration, idle, rss, peak float64) {
	b.Helper()
	oc, restartRukpak := stopRukpak(ctx, b)
	defer restartRukpak()
	if err := oc.KillAndRestart(ctx, 2*time.Minute); err != nil {
		b.Fatal(err)
	}
	pkgs := fourOperatorPackages(cats)
	idle = procStatusMB(oc.PID, "VmRSS")
	start := time.Now()
	for _, pkg := range pkgs {
		createOperator(ctx, b, "four-"+pkg, pkg)
	}
	created = time.Since(start)
	var last string
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 10*time.Minute, true, func(ctx context.Context) (bool, error) {
		list, err := olm.dc.Resource(operatorGVR).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		n := 0
		var pending []string
		for i := range list.Items {
			op := &list.Items[i]
			if !strings.HasPrefix(op.GetName(), "four-") {
				continue
			}
			if conditionTrue(op, "Resolved") {
				n++
			} else if len(pending) < 5 {
				conds, _, _ := unstructured.NestedSlice(op.Object, "status", "conditions")
				pending = append(pending, fmt.Sprintf("%s: %v", op.GetName(), conds))
			}
		}
		last = fmt.Sprintf("%d of %d resolved; %s", n, len(pkgs), strings.Join(pending, "; "))
		return n == len(pkgs), nil
	})
	if err != nil {
		b.Fatalf("Operators not resolved: %v; last: %s", err, last)
	}
	resolved = time.Since(start)
	rss, peak = procStatusMB(oc.PID, "VmRSS"), procStatusMB(oc.PID, "VmHWM")
	heapProfiles("four-resolved") // with $OLMV1_BENCH_PROFILE_DIR (rukpak, stopped, has none)

	deleteOperatorsRukpakStopped(ctx, b, "four", pkgs, restartRukpak)
	return created, resolved, idle, rss, peak
}

// deleteOperatorsRukpakStopped deletes the Operators prefix-<package> of pkgs, made while rukpak was
// stopped (stopRukpak), and waits until they and their BundleDeployments are gone. rukpak removes
// its finalizer from the deleted BundleDeployments (operator-controller creates them with it),
// although it installed nothing: startRukpak starts it once the Operators are gone
// (operator-controller deleted their BundleDeployments before that), so that it pulls none of
// their images.
func deleteOperatorsRukpakStopped(ctx context.Context, b *testing.B, prefix string, pkgs []string, startRukpak func()) {
	b.Helper()
	for _, pkg := range pkgs {
		if err := olm.dc.Resource(operatorGVR).Delete(ctx, prefix+"-"+pkg, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			b.Fatal(err)
		}
	}
	if err := waitGoneOf(ctx, prefix, 2*time.Minute, operatorGVR); err != nil {
		b.Fatalf("benchmark Operators not deleted: %v", err)
	}
	startRukpak()
	if err := waitGone(ctx, prefix, 2*time.Minute); err != nil {
		b.Fatalf("benchmark Operators and BundleDeployments not deleted: %v", err)
	}
}

// stopRukpak stops rukpak, so that Operators resolve but no bundle image is pulled, and returns
// operator-controller and what starts rukpak again (to be deferred).
func stopRukpak(ctx context.Context, b *testing.B) (oc *localcluster.Controller, restart func()) {
	b.Helper()
	rukpak, oc := olm.env.Controller("rukpak"), olm.env.Controller("operator-controller")
	if rukpak == nil || oc == nil {
		b.Fatal("rukpak or operator-controller is not running")
	}
	if err := rukpak.Kill(); err != nil {
		b.Fatal(err)
	}
	return oc, func() {
		if err := rukpak.EnsureRunning(ctx, 2*time.Minute); err != nil {
			b.Errorf("restarting rukpak: %v", err)
		}
	}
}

// deleteFourCatalogs deletes the benchmark's Catalogs (left by an earlier round) and waits until
// they are gone.
func deleteFourCatalogs(ctx context.Context, b *testing.B, cats []*fourCatalog) {
	b.Helper()
	for _, c := range cats {
		if err := olm.dc.Resource(catalogGVR).Delete(ctx, c.name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			b.Fatal(err)
		}
	}
	err := wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		list, err := olm.dc.Resource(catalogGVR).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		return countPrefixed(list.Items, "four") == 0, nil
	})
	if err != nil {
		b.Fatalf("benchmark Catalogs not deleted: %v", err)
	}
}

func (r fourResult) report(b *testing.B, cats []*fourCatalog, total int64) {
	b.Helper()
	var sb strings.Builder
	fmt.Fprintf(&sb, "four catalogs, %.1f MiB of FBC: all Serving in %.1fs (max concurrent unpacks %s, catalogd CPU %.1fs); catalogd RSS idle %.1f, peak %.1f (VmHWM), settled %.1f MiB (anon %.1f); resolution of %d Operators %.1fs (operator-controller RSS %.1f, peak %.1f MiB)",
		float64(total)/(1<<20), r.allServing.Seconds(), r.unpacks, r.unpackCPU, r.idleRSS, r.peakRSS, r.settledRSS, r.settledAnon,
		fourOperators, r.resolved.Seconds(), r.ocRSS, r.ocPeak)
	for _, l := range r.lists {
		fmt.Fprintf(&sb, "; list %s p50 %.1f p99 %.1f ms", l.pkg, ms(l.p50), ms(l.p99))
	}
	sb.WriteString("\n\n| catalog | FBC MiB | packages | largest package (KiB) | Serving after s | catalogd CPU s by then |\n| --- | --- | --- | --- | --- | --- |\n")
	for _, c := range cats {
		fmt.Fprintf(&sb, "| %s | %.1f | %d | %s (%.0f) | %.1f | %.1f |\n", c.name, float64(c.bytes)/(1<<20), len(c.packages),
			c.largest, float64(c.largestBytes)/(1<<10), r.serving[c.name].Seconds(), r.servingCPU[c.name])
	}
	fmt.Fprintf(&sb, "\ncatalogd RSS: idle %.1f MiB (anon %.1f), peak %.1f (VmHWM; sampled every 100 ms: %.1f), settled %.1f after %v idle (anon %.1f; last %v: %.1f-%.1f)\n",
		r.idleRSS, r.idleAnon, r.peakRSS, r.sampledPeak, r.settledRSS, r.settle, r.settledAnon, r.settle/3, r.settledMin, r.settledMax)
	sb.WriteString("\n| list (kubectl get catalogmetadata) | blobs | KiB | p50 ms | p99 ms |\n| --- | --- | --- | --- | --- |\n")
	for _, l := range r.lists {
		fmt.Fprintf(&sb, "| %s/%s | %d | %.0f | %.1f | %.1f |\n", l.catalog, l.pkg, l.blobs, l.kib, ms(l.p50), ms(l.p99))
	}
	fmt.Fprintf(&sb, "\nresolution: %d Operators (%d per catalog) created in %.1fs, all Resolved %.1fs after the first create; operator-controller RSS idle %.1f, after %.1f, peak %.1f MiB\n",
		fourOperators, fourOperators/len(cats), r.created.Seconds(), r.resolved.Seconds(), r.ocIdle, r.ocRSS, r.ocPeak)
	// Printed, not logged: go test cuts a benchmark's log after a few lines.
	fmt.Println(sb.String())

	b.ReportMetric(float64(total)/(1<<20), "fbc-MiB")
	b.ReportMetric(r.allServing.Seconds(), "all-serving-s")
	b.ReportMetric(r.unpackCPU, "unpack-cpu-s")
	b.ReportMetric(r.idleRSS, "catalogd-idle-rss-MB")
	b.ReportMetric(r.peakRSS, "catalogd-peak-rss-MB")
	b.ReportMetric(r.settledRSS, "catalogd-settled-rss-MB")
	b.ReportMetric(r.settledAnon, "catalogd-settled-anon-MB")
	for i, l := range r.lists {
		name := "small"
		if i > 0 {
			name = "largest"
		}
		b.ReportMetric(ms(l.p50), "list-"+name+"-p50-ms")
		b.ReportMetric(ms(l.p99), "list-"+name+"-p99-ms")
	}
	b.ReportMetric(r.resolved.Seconds(), "resolved-s")
	b.ReportMetric(r.ocRSS, "oc-rss-MB")
	b.ReportMetric(r.ocPeak, "oc-peak-rss-MB")
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
