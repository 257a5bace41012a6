package bench

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/metadata"

	"github.com/olmv1/olmv1/deppy/pkg/cluster"
)

var (
	operatorGVR = schema.GroupVersionResource{Group: "operators.operatorframework.io", Version: "v1alpha1", Resource: "operators"}
	bdGVR       = schema.GroupVersionResource{Group: "core.rukpak.io", Version: "v1alpha1", Resource: "bundledeployments"}
)

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

// conditionOf is u's status condition of type typ, nil when it has none.
func conditionOf(u *unstructured.Unstructured, typ string) map[string]any {
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, c := range conds {
		if m, _ := c.(map[string]any); m["type"] == typ {
			return m
		}
	}
	return nil
}

func conditionTrue(u *unstructured.Unstructured, typ string) bool {
	return conditionOf(u, typ)["status"] == "True"
}

// conditionTrueAtGeneration: condition typ is True for u's current generation.
func conditionTrueAtGeneration(u *unstructured.Unstructured, typ string) bool {
	c := conditionOf(u, typ)
	g, _, _ := unstructured.NestedInt64(c, "observedGeneration")
	return c["status"] == "True" && g == u.GetGeneration()
}

// createOperators creates an Operator for each package of fx, 10 requests at a time (as a client
// applying a manifest of many Operators with some parallelism would), and returns when each was
// created.
func createOperators(ctx context.Context, fx benchFixture) (map[string]time.Time, error) {
	return createNamedOperators(ctx, fx.names())
}

// createNamedOperators creates an Operator named like its package for each of names, 10 requests at
// a time, and returns when each was created.
func createNamedOperators(ctx context.Context, names []string) (map[string]time.Time, error) {
	created := make(map[string]time.Time, len(names))
	var mu sync.Mutex
	err := forEachName(names, func(name string) error {
		op := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "operators.operatorframework.io/v1alpha1", "kind": "Operator",
			"metadata": map[string]any{"name": name}, "spec": map[string]any{"packageName": name},
		}}
		at := time.Now()
		if _, err := olm.dc.Resource(operatorGVR).Create(ctx, op, metav1.CreateOptions{}); err != nil {
			return err
		}
		mu.Lock()
		created[name] = at
		mu.Unlock()
		return nil
	})
	return created, err
}

// deleteOperators deletes the Operators of fx, 10 requests at a time.
func deleteOperators(ctx context.Context, fx benchFixture) error {
	return forEachOperator(fx, func(name string) error {
		if err := olm.dc.Resource(operatorGVR).Delete(ctx, name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			return err
		}
		return nil
	})
}

// forEachOperator calls do for the name of each Operator of fx, 10 at a time, and returns the first
// error.
func forEachOperator(fx benchFixture, do func(name string) error) error {
	return forEachName(fx.names(), do)
}

// forEachName calls do for each of names, 10 at a time, and returns the first error.
func forEachName(names []string, do func(name string) error) error {
	queue := make(chan string)
	errs := make(chan error, len(names))
	var wg sync.WaitGroup
	for w := 0; w < 10; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for name := range queue {
				if err := do(name); err != nil {
					errs <- err
				}
			}
		}()
	}
	for _, name := range names {
		queue <- name
	}
	close(queue)
	wg.Wait()
	close(errs)
	return <-errs // nil when none failed
}

// operatorsDone is when each Operator was first seen done (Installed and Healthy, at a version when
// one is asked for), as seen by a watch.
type operatorsDone struct {
	start time.Time
	at    map[string]time.Time
	// lastInstalled is when the last Operator was first seen Installed (Healthy or not).
	lastInstalled time.Time
	// installed is when each Operator was first seen Installed (Healthy or not); resolved, when it
	// was first seen Resolved (at the version asked for, when one is); bdInstalled, when its
	// BundleDeployment was first seen Installed (at that version: the Operator's Installed follows).
	installed, resolved, bdInstalled map[string]time.Time
	// cpuAtInstalled is the CPU used so far (cpuNow) when the last Operator was seen Installed.
	cpuAtInstalled cpuReading
}

// durations is, sorted, how long after since[name] (or start, when since is nil) each Operator was done.
func (d operatorsDone) durations(since map[string]time.Time) []time.Duration {
	var out []time.Duration
	for name, at := range d.at {
		from := d.start
		if s, ok := since[name]; ok {
			from = s
		}
		out = append(out, at.Sub(from))
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

// timeline says when (seconds after start) the first Operator, 10 %, 50 % and 90 % of them and the
// last were seen Resolved and Installed, and the wall time per Operator between 10 % and 90 %
// Installed: the rate once running, without the first Operator's wait and the last ones' tail.
func (d operatorsDone) timeline() string {
	marks := func(at map[string]time.Time) ([]time.Duration, string) {
		var ds []time.Duration
		for _, t := range at {
			ds = append(ds, t.Sub(d.start))
		}
		sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
		if len(ds) == 0 {
			return ds, "none"
		}
		s := func(q float64) float64 { return quantile(ds, q).Seconds() }
		return ds, fmt.Sprintf("first %.1f, 10 %% %.1f, 50 %% %.1f, 90 %% %.1f, last %.1f", ds[0].Seconds(), s(0.10), s(0.50), s(0.90), ds[len(ds)-1].Seconds())
	}
	_, resolved := marks(d.resolved)
	_, bdInstalled := marks(d.bdInstalled)
	inst, installed := marks(d.installed)
	out := fmt.Sprintf("Resolved (s): %s; BundleDeployment Installed (s): %s; Installed (s): %s", resolved, bdInstalled, installed)
	if i10, i90 := int(0.1*float64(len(inst))), int(0.9*float64(len(inst))); i90 > i10 {
		out += fmt.Sprintf("; between 10 %% and 90 %% Installed: %.1f ms per Operator",
			1000*(inst[i90-1]-inst[i10]).Seconds()/float64(i90-1-i10))
	}
	return out
}

// quantile of sorted durations d (0 when empty).
func quantile(d []time.Duration, q float64) time.Duration {
	if len(d) == 0 {
		return 0
	}
	i := int(q*float64(len(d))+0.5) - 1
	if i < 0 {
		i = 0
	}
	if i >= len(d) {
		i = len(d) - 1
	}
	return d[i]
}

// waitOperators watches until n Operators named prefix-* are Installed and Healthy (only Installed
// when healthy is false; and, when version is set, report it as their installed bundle's version);
// on timeout it names one that is not and why. It watches rather than lists in a loop: listing every 50 ms would keep kube-apiserver
// busy serialising objects, on the same 2 cores the install is measured on.
func waitOperators(ctx context.Context, prefix string, n int, start time.Time, timeout time.Duration, version string, healthy bool) (operatorsDone, error) {
	d := operatorsDone{start: start, at: map[string]time.Time{}, installed: map[string]time.Time{}, resolved: map[string]time.Time{}, bdInstalled: map[string]time.Time{}}
	last := map[string]string{}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	events := make(chan watchedObject)
	go watchObjects(ctx, operatorGVR, events)
	go watchObjects(ctx, bdGVR, events)
	for len(d.at) < n && (healthy || len(d.installed) < n) {
		select {
		case ev := <-events:
			u, name := ev.obj, ev.obj.GetName()
			if ev.gvr == bdGVR {
				if _, seen := d.bdInstalled[name]; !seen && strings.HasPrefix(name, prefix+"-") && conditionTrueAtGeneration(u, "Installed") &&
					(version == "" || u.GetAnnotations()[cluster.AnnotationBundleVersion] == version) {
					d.bdInstalled[name] = time.Now()
				}
				continue
			}
			if _, seen := d.at[name]; seen || !strings.HasPrefix(name, prefix+"-") {
				continue
			}
			got, _, _ := unstructured.NestedString(u.Object, "status", "installedBundle", "version")
			resolvedTo, _, _ := unstructured.NestedString(u.Object, "status", "resolvedBundle", "version")
			if _, seen := d.resolved[name]; !seen && conditionTrue(u, "Resolved") && (version == "" || resolvedTo == version) {
				d.resolved[name] = time.Now()
			}
			if _, seen := d.installed[name]; !seen && conditionTrue(u, "Installed") && (version == "" || got == version) {
				d.lastInstalled = time.Now()
				d.installed[name] = d.lastInstalled
				if len(d.installed) == n {
					d.cpuAtInstalled = cpuNow()
				}
			}
			if conditionTrue(u, "Installed") && conditionTrue(u, "Healthy") && (version == "" || got == version) {
				d.at[name] = time.Now()
				delete(last, name)
			} else {
				last[name] = fmt.Sprintf("%s: %v", name, u.Object["status"])
			}
		case <-ctx.Done():
			example := ""
			for _, v := range last {
				example = v
				break
			}
			done := len(d.at)
			if !healthy {
				done = len(d.installed)
			}
			return d, fmt.Errorf("%d of %d Operators done (e.g. not %s): %w", done, n, example, ctx.Err())
		}
	}
	return d, nil
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

// waitGone polls (metadata only, every 250 ms) until no Operator and no BundleDeployment named
// prefix-* is left.
func waitGone(ctx context.Context, prefix string, timeout time.Duration) error {
	return waitGoneOf(ctx, prefix, timeout, operatorGVR, bdGVR)
}

// waitGoneOf waits until no object of the resources gvrs is named prefix-*.
func waitGoneOf(ctx context.Context, prefix string, timeout time.Duration, gvrs ...schema.GroupVersionResource) error {
	mc, err := metadata.NewForConfig(benchConfig())
	if err != nil {
		return err
	}
	return wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		for _, gvr := range gvrs {
			list, err := mc.Resource(gvr).List(ctx, metav1.ListOptions{})
			if err != nil {
				return false, err
			}
			for _, it := range list.Items {
				if strings.HasPrefix(it.GetName(), prefix+"-") {
					return false, nil
				}
			}
		}
		return true, nil
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

func p50(d []time.Duration) time.Duration {
	s := append([]time.Duration(nil), d...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[len(s)/2]
}
