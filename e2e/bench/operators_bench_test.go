package bench

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/olmv1/olmv1/e2e/localcluster"
	"github.com/olmv1/olmv1/rukpak/pkg/imagebuild"
)

var (
	operatorGVR = schema.GroupVersionResource{Group: "operators.operatorframework.io", Version: "v1alpha1", Resource: "operators"}
	bdGVR       = schema.GroupVersionResource{Group: "core.rukpak.io", Version: "v1alpha1", Resource: "bundledeployments"}
)

const (
	// benchOperators is how many Operators BenchmarkOperatorsInstall installs from one catalog.
	benchOperators = 100
	// benchUpdates is how many catalog image updates it times.
	benchUpdates = 5
)

// BenchmarkOperatorsInstall is issue 8's benchmark on the local control plane: one catalog with 100
// packages (each a registry+v1 bundle image of its own, built from the example-operator fixture),
// 100 Operators naming only their package, created at once. It reports
//
//	s-to-all-installed       time from creating the Operators until all are Installed (target < 10 s)
//	s-to-create-operators    of which the client creating them (10 requests at a time)
//	operator-controller-MB   operator-controller's RSS once they are (target < 75 MB)
//	rukpak-MB                rukpak's RSS once they are
//	update-served-p50-s      catalog image update → catalogd serves the new content (status.contentHash), p50 of 5
//	update-p50-s             catalog image update → the BundleDeployment references the new bundle, p50 (target < 3 s)
//	update-installed-p50-s   … → the Operator reports the new version Installed, p50
//	operator-controller-cpu-s, rukpak-cpu-s   CPU time each used until all were Installed
//	s-to-all-removed         time from deleting the Operators until every BundleDeployment is gone
//
// Each update publishes a new catalog image in which one more package has a version 1.1.0 that
// replaces 1.0.0, and points the Catalog at it: operator-controller re-resolves all 100 Operators.
func BenchmarkOperatorsInstall(b *testing.B) {
	b.StopTimer() // ns/op is the time to install the 100 Operators only: not starting the environment
	startOLM(b)
	ctx := context.Background()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		prefix := fmt.Sprintf("bench%d-op", i)
		fx := pushBenchOperators(ctx, b, prefix)
		catalog := prefix + "-catalog"
		createCatalog(ctx, b, catalog, fx.catalogRef(0))
		b.StartTimer()

		ocCPU0, rukpakCPU0 := controllerCPU("operator-controller"), controllerCPU("rukpak")
		installStart := time.Now()
		if err := createOperators(ctx, fx); err != nil {
			b.Fatal(err)
		}
		created := time.Since(installStart)
		timeline, err := waitAllInstalled(ctx, prefix, benchOperators, installStart, 5*time.Minute)
		if err != nil {
			b.Fatal(err)
		}
		installTime := time.Since(installStart)
		b.StopTimer()
		ocRSS, rukpakRSS := controllerRSS("operator-controller"), controllerRSS("rukpak")
		ocCPU, rukpakCPU := controllerCPU("operator-controller")-ocCPU0, controllerCPU("rukpak")-rukpakCPU0

		var toServed, toRef, toInstalled []time.Duration
		for u := 1; u <= benchUpdates; u++ {
			name := fx.pkg(u - 1)
			hash, err := catalogHash(ctx, catalog)
			if err != nil {
				b.Fatal(err)
			}
			start := time.Now()
			patch := fmt.Sprintf(`{"spec":{"source":{"image":{"ref":%q}}}}`, fx.catalogRef(u))
			if _, err := olm.dc.Resource(catalogGVR).Patch(ctx, catalog, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
				b.Fatal(err)
			}
			if err := waitCatalogHashChange(ctx, catalog, hash); err != nil {
				b.Fatal(err)
			}
			toServed = append(toServed, time.Since(start))
			if err := waitBundleRef(ctx, name, fx.bundleRef(u-1, "1.1.0")); err != nil {
				b.Fatal(err)
			}
			toRef = append(toRef, time.Since(start))
			if err := waitInstalledVersion(ctx, name, "1.1.0"); err != nil {
				b.Fatal(err)
			}
			toInstalled = append(toInstalled, time.Since(start))
		}

		removeStart := time.Now()
		for n := 0; n < benchOperators; n++ {
			if err := olm.dc.Resource(operatorGVR).Delete(ctx, fx.pkg(n), metav1.DeleteOptions{}); err != nil {
				b.Fatal(err)
			}
		}
		if err := waitNoBundleDeployments(ctx, prefix, 5*time.Minute); err != nil {
			b.Fatal(err)
		}
		removeTime := time.Since(removeStart)
		_ = olm.dc.Resource(catalogGVR).Delete(ctx, catalog, metav1.DeleteOptions{})

		b.ReportMetric(installTime.Seconds(), "s-to-all-installed")
		b.ReportMetric(created.Seconds(), "s-to-create-operators")
		b.ReportMetric(ocRSS, "operator-controller-MB")
		b.ReportMetric(rukpakRSS, "rukpak-MB")
		b.ReportMetric(ocCPU, "operator-controller-cpu-s")
		b.ReportMetric(rukpakCPU, "rukpak-cpu-s")
		b.ReportMetric(p50(toServed).Seconds(), "update-served-p50-s")
		b.ReportMetric(p50(toRef).Seconds(), "update-p50-s")
		b.ReportMetric(p50(toInstalled).Seconds(), "update-installed-p50-s")
		b.ReportMetric(removeTime.Seconds(), "s-to-all-removed")
		b.Logf("BundleDeployments created:   %s", timeline.quartiles(timeline.bdSeen, benchOperators))
		b.Logf("BundleDeployments Installed: %s", timeline.quartiles(timeline.bdInstalledAt, benchOperators))
		b.Logf("Operators Installed:         %s", timeline.quartiles(timeline.installedAt, benchOperators))
		b.Logf("%d Operators Installed in %v; updates → catalog served %v, → BundleDeployment %v, → Installed %v; removed in %v",
			benchOperators, installTime.Round(time.Millisecond), toServed, toRef, toInstalled, removeTime.Round(time.Millisecond))
	}
}

// createOperators creates the Operators of fx, 10 requests at a time (as a client applying a
// manifest of 100 Operators with some parallelism would), so that the benchmark measures the
// controllers rather than one client's round trips.
func createOperators(ctx context.Context, fx benchFixture) error {
	names := make(chan string)
	errs := make(chan error, benchOperators)
	var wg sync.WaitGroup
	for w := 0; w < 10; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for name := range names {
				op := &unstructured.Unstructured{Object: map[string]any{
					"apiVersion": "operators.operatorframework.io/v1alpha1", "kind": "Operator",
					"metadata": map[string]any{"name": name}, "spec": map[string]any{"packageName": name},
				}}
				if _, err := olm.dc.Resource(operatorGVR).Create(ctx, op, metav1.CreateOptions{}); err != nil {
					errs <- err
				}
			}
		}()
	}
	for n := 0; n < benchOperators; n++ {
		names <- fx.pkg(n)
	}
	close(names)
	wg.Wait()
	close(errs)
	return <-errs // nil when none failed
}

// benchFixture is what pushBenchOperators published.
type benchFixture struct {
	prefix   string
	registry string
}

func (f benchFixture) pkg(n int) string { return fmt.Sprintf("%s-%03d", f.prefix, n) }

func (f benchFixture) bundleRef(n int, version string) string {
	return f.registry + "/bundles/" + f.pkg(n) + ":" + version
}

// catalogRef is the catalog image in which the first u packages also have version 1.1.0.
func (f benchFixture) catalogRef(u int) string {
	return fmt.Sprintf("%s/catalogs/%s-index:v%d", f.registry, f.prefix, u)
}

// pushBenchOperators builds and pushes, for each of benchOperators packages, bundle 1.0.0 and (for
// the first benchUpdates) 1.1.0: the example-operator bundle 0.1.0 with the package, CSV name and
// version rewritten, so every bundle is an image of its own. Then the catalog images v0…vN.
func pushBenchOperators(ctx context.Context, b *testing.B, prefix string) benchFixture {
	b.Helper()
	fx := benchFixture{prefix: prefix, registry: olm.env.Registry.Addr}
	src := filepath.Join(repoRoot(), "e2e", "testdata", "example-operator", "bundles", "0.1.0")
	csv, err := os.ReadFile(filepath.Join(src, "manifests", "example-operator.clusterserviceversion.yaml"))
	if err != nil {
		b.Fatal(err)
	}
	annotations, err := os.ReadFile(filepath.Join(src, "metadata", "annotations.yaml"))
	if err != nil {
		b.Fatal(err)
	}
	tmp := b.TempDir()
	push := func(n int, version string) {
		pkg := fx.pkg(n)
		dir := filepath.Join(tmp, pkg, version)
		r := strings.NewReplacer("example-operator-system", pkg, "example-operator", pkg, "0.1.0", version)
		files := map[string]string{
			filepath.Join("manifests", pkg+".clusterserviceversion.yaml"): r.Replace(string(csv)),
			filepath.Join("metadata", "annotations.yaml"):                 r.Replace(string(annotations)),
		}
		for name, content := range files {
			if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755); err != nil {
				b.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
				b.Fatal(err)
			}
		}
		img, err := imagebuild.RegistryV1BundleImage(dir)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := imagebuild.Push(ctx, img, fx.bundleRef(n, version), imagebuild.WithInsecure()); err != nil {
			b.Fatal(err)
		}
	}
	for n := 0; n < benchOperators; n++ {
		push(n, "1.0.0")
		if n < benchUpdates {
			push(n, "1.1.0")
		}
	}
	for u := 0; u <= benchUpdates; u++ {
		var fbc strings.Builder
		for n := 0; n < benchOperators; n++ {
			pkg := fx.pkg(n)
			fmt.Fprintf(&fbc, `{"schema":"olm.package","name":%q,"defaultChannel":"stable"}`+"\n", pkg)
			entries := fmt.Sprintf(`{"name":"%s.v1.0.0"}`, pkg)
			bundles := benchBundle(pkg, "1.0.0", fx.bundleRef(n, "1.0.0"))
			if n < u {
				entries += fmt.Sprintf(`,{"name":"%s.v1.1.0","replaces":"%s.v1.0.0"}`, pkg, pkg)
				bundles += benchBundle(pkg, "1.1.0", fx.bundleRef(n, "1.1.0"))
			}
			fmt.Fprintf(&fbc, `{"schema":"olm.channel","package":%q,"name":"stable","entries":[%s]}`+"\n", pkg, entries)
			fbc.WriteString(bundles)
		}
		dir := filepath.Join(tmp, fmt.Sprintf("catalog-v%d", u))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			b.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "catalog.json"), []byte(fbc.String()), 0o644); err != nil {
			b.Fatal(err)
		}
		img, err := imagebuild.CatalogImage(dir)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := imagebuild.Push(ctx, img, fx.catalogRef(u), imagebuild.WithInsecure()); err != nil {
			b.Fatal(err)
		}
	}
	return fx
}

func benchBundle(pkg, version, image string) string {
	return fmt.Sprintf(`{"schema":"olm.bundle","package":%q,"name":"%s.v%s","image":%q,"properties":[`+
		`{"type":"olm.package","value":{"packageName":%q,"version":%q}},`+
		`{"type":"olm.csv.metadata","value":{"annotations":{"operatorframework.io/suggested-namespace":%q},"installModes":[{"type":"AllNamespaces","supported":true}]}}]}`+"\n",
		pkg, pkg, version, image, pkg, version, pkg)
}

// createCatalog creates an image Catalog and waits until it serves its content.
func createCatalog(ctx context.Context, b *testing.B, name, ref string) {
	b.Helper()
	obj := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "catalogd.operatorframework.io/v1alpha1", "kind": "Catalog",
		"metadata": map[string]any{"name": name},
		"spec":     map[string]any{"source": map[string]any{"type": "Image", "image": map[string]any{"ref": ref}}},
	}}
	if _, err := olm.dc.Resource(catalogGVR).Create(ctx, obj, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		b.Fatal(err)
	}
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		c, err := olm.dc.Resource(catalogGVR).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		return conditionTrue(c, "Serving"), nil
	})
	if err != nil {
		b.Fatalf("catalog %s not serving: %v", name, err)
	}
}

func conditionTrue(u *unstructured.Unstructured, typ string) bool {
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, c := range conds {
		m, _ := c.(map[string]any)
		if m["type"] == typ {
			return m["status"] == "True"
		}
	}
	return false
}

// installTimeline is when each BundleDeployment was first seen and each Operator first seen
// Installed, as seen by polling every 50 ms.
type installTimeline struct {
	start                              time.Time
	bdSeen, bdInstalledAt, installedAt map[string]time.Time
}

// quartiles describes the times of m relative to start: 25%, 50%, 75% and 100% of n.
func (t installTimeline) quartiles(m map[string]time.Time, n int) string {
	var d []time.Duration
	for _, at := range m {
		d = append(d, at.Sub(t.start).Round(10*time.Millisecond))
	}
	sort.Slice(d, func(i, j int) bool { return d[i] < d[j] })
	if len(d) < n {
		return fmt.Sprintf("%d of %d", len(d), n)
	}
	return fmt.Sprintf("25%% %v, 50%% %v, 75%% %v, 100%% %v", d[n/4-1], d[n/2-1], d[3*n/4-1], d[n-1])
}

// waitAllInstalled watches until n Operators named prefix-* are Installed, recording when each
// BundleDeployment appeared and each Operator became Installed; on timeout it names an Operator that
// is not Installed and why. It watches rather than lists in a loop: listing 200 objects every 50 ms
// kept kube-apiserver busy serialising them, on the same 2 cores the install is measured on.
func waitAllInstalled(ctx context.Context, prefix string, n int, start time.Time, timeout time.Duration) (installTimeline, error) {
	t := installTimeline{start: start, bdSeen: map[string]time.Time{}, bdInstalledAt: map[string]time.Time{}, installedAt: map[string]time.Time{}}
	last := map[string]string{}
	observe := func(gvr schema.GroupVersionResource, u *unstructured.Unstructured) {
		name, now := u.GetName(), time.Now()
		if !strings.HasPrefix(name, prefix+"-") {
			return
		}
		if gvr == bdGVR {
			if _, ok := t.bdSeen[name]; !ok {
				t.bdSeen[name] = now
			}
			if _, ok := t.bdInstalledAt[name]; !ok && conditionTrue(u, "Installed") {
				t.bdInstalledAt[name] = now
			}
			return
		}
		if _, ok := t.installedAt[name]; !ok && conditionTrue(u, "Installed") {
			t.installedAt[name] = now
			delete(last, name)
		} else if !ok {
			last[name] = fmt.Sprintf("%s: %v", name, u.Object["status"])
		}
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	events := make(chan watchedObject)
	for _, gvr := range []schema.GroupVersionResource{bdGVR, operatorGVR} {
		go watchObjects(ctx, gvr, events)
	}
	for len(t.installedAt) < n || len(t.bdInstalledAt) < n {
		select {
		case ev := <-events:
			observe(ev.gvr, ev.obj)
		case <-ctx.Done():
			example := ""
			for _, v := range last {
				example = v
				break
			}
			return t, fmt.Errorf("not every Operator is Installed (e.g. %s): %w", example, ctx.Err())
		}
	}
	return t, nil
}

// watchedObject is one object a watch (or its initial list) delivered.
type watchedObject struct {
	gvr schema.GroupVersionResource
	obj *unstructured.Unstructured
}

// watchObjects sends every object of gvr, listed then watched (listed again when a watch ends),
// until ctx ends.
func watchObjects(ctx context.Context, gvr schema.GroupVersionResource, out chan<- watchedObject) {
	send := func(u *unstructured.Unstructured) bool {
		select {
		case out <- watchedObject{gvr: gvr, obj: u}:
			return true
		case <-ctx.Done():
			return false
		}
	}
	for ctx.Err() == nil {
		list, err := olm.dc.Resource(gvr).List(ctx, metav1.ListOptions{})
		if err != nil {
			select { // back off before listing again
			case <-time.After(100 * time.Millisecond):
				continue
			case <-ctx.Done():
				return
			}
		}
		for i := range list.Items {
			if !send(&list.Items[i]) {
				return
			}
		}
		w, err := olm.dc.Resource(gvr).Watch(ctx, metav1.ListOptions{ResourceVersion: list.GetResourceVersion()})
		if err != nil {
			continue
		}
		for ev := range w.ResultChan() {
			if u, ok := ev.Object.(*unstructured.Unstructured); ok && !send(u) {
				w.Stop()
				return
			}
		}
	}
}

func countPrefixed(items []unstructured.Unstructured, prefix string) int {
	n := 0
	for _, it := range items {
		if strings.HasPrefix(it.GetName(), prefix+"-") {
			n++
		}
	}
	return n
}

// catalogHash is the Catalog's status.contentHash.
func catalogHash(ctx context.Context, name string) (string, error) {
	c, err := olm.dc.Resource(catalogGVR).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return "", err
	}
	h, _, _ := unstructured.NestedString(c.Object, "status", "contentHash")
	return h, nil
}

// waitCatalogHashChange polls until the Catalog serves content with another hash than old.
func waitCatalogHashChange(ctx context.Context, name, old string) error {
	return wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		c, err := olm.dc.Resource(catalogGVR).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		h, _, _ := unstructured.NestedString(c.Object, "status", "contentHash")
		return h != old && conditionTrue(c, "Serving"), nil
	})
}

// waitBundleRef polls until BundleDeployment name references image ref.
func waitBundleRef(ctx context.Context, name, ref string) error {
	return wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		bd, err := olm.dc.Resource(bdGVR).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, nil //nolint:nilerr // keep polling
		}
		got, _, _ := unstructured.NestedString(bd.Object, "spec", "source", "image", "ref")
		return got == ref, nil
	})
}

// waitInstalledVersion polls until Operator name reports version as installed.
func waitInstalledVersion(ctx context.Context, name, version string) error {
	return wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		op, err := olm.dc.Resource(operatorGVR).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		got, _, _ := unstructured.NestedString(op.Object, "status", "installedBundle", "version")
		return got == version && conditionTrue(op, "Installed"), nil
	})
}

func waitNoBundleDeployments(ctx context.Context, prefix string, timeout time.Duration) error {
	return wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		list, err := olm.dc.Resource(bdGVR).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		return countPrefixed(list.Items, prefix) == 0, nil
	})
}

// controllerRSS is the RSS of a controller process in MB (0 when unknown).
func controllerRSS(name string) float64 {
	c := olm.env.Controller(name)
	if c == nil {
		return 0
	}
	rss, err := localcluster.RSS(c.PID)
	if err != nil {
		return 0
	}
	return float64(rss) / (1 << 20)
}

// controllerCPU is the CPU time (user + system) a controller process used so far, in seconds.
func controllerCPU(name string) float64 {
	c := olm.env.Controller(name)
	if c == nil {
		return 0
	}
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", c.PID))
	if err != nil {
		return 0
	}
	// The fields after the command name (which may hold spaces) start after the last ')'.
	f := strings.Fields(string(stat)[strings.LastIndexByte(string(stat), ')')+2:])
	if len(f) < 13 {
		return 0
	}
	utime, _ := strconv.ParseFloat(f[11], 64)
	stime, _ := strconv.ParseFloat(f[12], 64)
	return (utime + stime) / 100 // USER_HZ is 100 on Linux
}

func p50(d []time.Duration) time.Duration {
	s := append([]time.Duration(nil), d...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[len(s)/2]
}
